package engine

// History renders a transcript as the input of a request rebuilt from it.
var History = history
