// Package db holds Toolgate's database migrations, embedded in the binary.
package db

import "embed"

// Migrations are the goose SQL migrations, applied in file-name order.
//
//go:embed migrations/*.sql
var Migrations embed.FS
