package postgres

// HeaderBox is the key the store encrypts headers with in tests.
var HeaderBox = box
