package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/toolgate/toolgate/internal/secrets"
)

// headerBox encrypts MCP server headers at rest. It is one per process, set
// once at start with UseSecrets; until then a random key of this process is
// used, so tests need no key (and nothing written that way outlives it).
var headerBox atomic.Pointer[secrets.Box]

var processBox = secrets.NewRandom()

// UseSecrets sets the key that encrypts the header secrets of MCP servers.
func UseSecrets(b *secrets.Box) { headerBox.Store(b) }

func box() *secrets.Box {
	if b := headerBox.Load(); b != nil {
		return b
	}
	return processBox
}

// sealHeaders encrypts a server's headers, bound to its label.
func sealHeaders(b *secrets.Box, label string, h map[string]string) ([]byte, error) {
	if h == nil {
		h = map[string]string{}
	}
	plain, err := json.Marshal(h)
	if err != nil {
		return nil, err
	}
	return b.Seal(plain, []byte(label)), nil
}

// openHeaders decrypts what sealHeaders stored; nil is no headers.
func openHeaders(b *secrets.Box, label string, sealed []byte) (map[string]string, error) {
	h := map[string]string{}
	if sealed == nil {
		return h, nil
	}
	plain, err := b.Open(sealed, []byte(label))
	if err != nil {
		return nil, fmt.Errorf("the header secrets of the MCP server %q: %w", label, err)
	}
	if err := json.Unmarshal(plain, &h); err != nil {
		return nil, fmt.Errorf("the header secrets of the MCP server %q are not a JSON object: %w", label, err)
	}
	return h, nil
}

// SealHeaders runs at start, after the migrations: it encrypts header
// values still stored in plain text (from before migration 00004) with b
// and empties the plaintext column, and it checks that b opens every value
// already encrypted, so a wrong SECRETS_KEY stops the start instead of
// failing later, server by server. It returns how many servers it sealed.
func SealHeaders(ctx context.Context, pool *pgxpool.Pool, b *secrets.Box) (int, error) {
	sealed := 0
	err := inTx(ctx, pool, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `SELECT label, headers, headers_enc FROM mcp_servers ORDER BY label FOR UPDATE`)
		if err != nil {
			return err
		}
		type row struct {
			label string
			plain map[string]string
			enc   []byte
		}
		all, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (row, error) {
			var x row
			err := r.Scan(&x.label, &x.plain, &x.enc)
			return x, err
		})
		if err != nil {
			return err
		}
		for _, x := range all {
			if x.enc != nil {
				if _, err := openHeaders(b, x.label, x.enc); err != nil {
					return fmt.Errorf("%w: is SECRETS_KEY (or the key file SECRETS_KEY_FILE) the key these secrets were stored with?", err)
				}
				if len(x.plain) == 0 {
					continue
				}
				return fmt.Errorf("the MCP server %q has header secrets both encrypted and in plain text; remove its headers column value by hand after checking which is current", x.label)
			}
			enc, err := sealHeaders(b, x.label, x.plain)
			if err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `UPDATE mcp_servers SET headers_enc = $2, headers = '{}' WHERE label = $1`, x.label, enc); err != nil {
				return err
			}
			sealed++
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("encrypt MCP server header secrets: %w", err)
	}
	return sealed, nil
}
