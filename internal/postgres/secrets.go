package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
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

// urlMask replaces every query value of a URL as stored in the url column
// when the URL itself is encrypted (url_enc).
const urlMask = "********"

// sealURL is how a server's URL is stored: a URL with a query (whose values
// often carry secrets, ?api_key=…) goes encrypted into url_enc, bound to the
// label, and url keeps it with the query values masked; a URL without one
// is stored as it is (sealed nil).
func sealURL(b *secrets.Box, label, raw string) (shown string, sealed []byte) {
	u, err := url.Parse(raw)
	if err != nil || u.RawQuery == "" {
		return raw, nil
	}
	parts := strings.Split(u.RawQuery, "&")
	for i, p := range parts {
		if name, _, ok := strings.Cut(p, "="); ok {
			parts[i] = name + "=" + urlMask
		}
	}
	u.RawQuery = strings.Join(parts, "&")
	return u.String(), b.Seal([]byte(raw), urlAAD(label))
}

// openURL is the real URL of a server: url_enc decrypted, or url when the
// URL is not encrypted.
func openURL(b *secrets.Box, label, shown string, sealed []byte) (string, error) {
	if sealed == nil {
		return shown, nil
	}
	plain, err := b.Open(sealed, urlAAD(label))
	if err != nil {
		return "", fmt.Errorf("the URL of the MCP server %q: %w", label, err)
	}
	return string(plain), nil
}

// urlAAD binds an encrypted URL to its row and column: a header value
// moved into url_enc does not open.
func urlAAD(label string) []byte { return []byte("url:" + label) }

// SealHeaders runs at start, after the migrations: it encrypts header
// values still stored in plain text (from before migration 00004) with b
// and empties the plaintext column, encrypts URLs with a query stored in
// plain text (from before migration 00032), and it checks that b opens
// every value already encrypted, so a wrong SECRETS_KEY stops the start
// instead of failing later, server by server. It returns how many servers
// it sealed.
func SealHeaders(ctx context.Context, pool *pgxpool.Pool, b *secrets.Box) (int, error) {
	sealed := 0
	err := inTx(ctx, pool, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `SELECT label, headers, headers_enc, url, url_enc FROM mcp_servers ORDER BY label FOR UPDATE`)
		if err != nil {
			return err
		}
		all, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (sealRow, error) {
			var x sealRow
			err := r.Scan(&x.label, &x.plain, &x.enc, &x.url, &x.urlEnc)
			return x, err
		})
		if err != nil {
			return err
		}
		for _, x := range all {
			counted, err := sealServer(ctx, tx, b, x)
			if err != nil {
				return err
			}
			if counted {
				sealed++
			}
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("encrypt MCP server header secrets: %w", err)
	}
	return sealed, nil
}

// sealRow is one server's secrets as SealHeaders reads them.
type sealRow struct {
	label  string
	plain  map[string]string
	enc    []byte
	url    string
	urlEnc []byte
}

// sealServer seals one server's URL and plain-text headers in tx, or checks
// that b opens them; it reports whether it sealed anything of the server
// SealHeaders counts.
func sealServer(ctx context.Context, tx pgx.Tx, b *secrets.Box, x sealRow) (bool, error) {
	urlSealed, err := sealStoredURL(ctx, tx, b, x.label, x.url, x.urlEnc)
	if err != nil {
		return false, err
	}
	if x.enc != nil {
		if _, err := openHeaders(b, x.label, x.enc); err != nil {
			return false, fmt.Errorf("%w: is SECRETS_KEY (or the key file SECRETS_KEY_FILE) the key these secrets were stored with?", err)
		}
		if len(x.plain) == 0 {
			return urlSealed, nil
		}
		return false, fmt.Errorf("the MCP server %q has header secrets both encrypted and in plain text; remove its headers column value by hand after checking which is current", x.label)
	}
	enc, err := sealHeaders(b, x.label, x.plain)
	if err != nil {
		return false, err
	}
	if _, err := tx.Exec(ctx, `UPDATE mcp_servers SET headers_enc = $2, headers = '{}' WHERE label = $1`, x.label, enc); err != nil {
		return false, err
	}
	return true, nil
}

// sealStoredURL checks that b opens a server's encrypted URL, or encrypts
// its URL when it has a query and is stored in plain text; sealed reports
// the latter.
func sealStoredURL(ctx context.Context, tx pgx.Tx, b *secrets.Box, label, shown string, enc []byte) (sealed bool, err error) {
	if enc != nil {
		if _, err := openURL(b, label, shown, enc); err != nil {
			return false, fmt.Errorf("%w: is SECRETS_KEY (or the key file SECRETS_KEY_FILE) the key these secrets were stored with?", err)
		}
		return false, nil
	}
	masked, urlEnc := sealURL(b, label, shown)
	if urlEnc == nil {
		return false, nil
	}
	_, err = tx.Exec(ctx, `UPDATE mcp_servers SET url = $2, url_enc = $3 WHERE label = $1`, label, masked, urlEnc)
	return err == nil, err
}
