package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/toolgate/toolgate/internal/apperr"
)

// TestTranslate_SQLStates: every SQLSTATE that means the connection is gone
// or cannot be made is database_unavailable with a Retry-After; the others
// keep their kinds, and an unknown one stays an internal error (500).
func TestTranslate_SQLStates(t *testing.T) {
	cases := []struct {
		code     string
		wantCode string // "" means: not an apperr (internal)
	}{
		{"57P01", "database_unavailable"}, // admin_shutdown (pg_terminate_backend)
		{"57P02", "database_unavailable"}, // crash_shutdown
		{"57P03", "database_unavailable"}, // cannot_connect_now
		{"57P05", "database_unavailable"}, // idle_session_timeout
		{"53300", "database_unavailable"}, // too_many_connections
		{"08000", "database_unavailable"}, // connection_exception
		{"08003", "database_unavailable"}, // connection_does_not_exist
		{"08006", "database_unavailable"}, // connection_failure
		{"08001", "database_unavailable"}, // sqlclient_unable_to_establish_sqlconnection
		{"08004", "database_unavailable"}, // sqlserver_rejected_establishment_of_sqlconnection
		{"23505", "conflict"},
		{"42P04", "conflict"},
		{"23503", "not_found"},
		{"3D000", "database_missing"},
		{"57014", ""}, // query_canceled: a statement timeout is ours to fix
		{"42601", ""}, // syntax_error
		{"53100", ""}, // disk_full
		{"22P02", ""}, // invalid_text_representation
	}
	for _, tc := range cases {
		err := translate(fmt.Errorf("wrapped: %w", &pgconn.PgError{Code: tc.code, Message: "m"}), "list servers")
		checkTranslated(t, tc.code, err, tc.wantCode)
	}
}

// TestTranslate_ConnectionErrors: the driver's and the network's ways of
// saying "no connection" are database_unavailable; a caller that went
// away is not.
func TestTranslate_ConnectionErrors(t *testing.T) {
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: &net.DNSError{}}
	cases := []struct {
		name     string
		err      error
		wantCode string
	}{
		// What a real ConnectError carries when the server refuses the
		// session: ALLOW_CONNECTIONS false (55000), too many connections.
		{"ConnectError 55000", connectErr(t, "55000"), "database_unavailable"},
		{"ConnectError 53300", connectErr(t, "53300"), "database_unavailable"},
		{"ConnectError 3D000", connectErr(t, "3D000"), "database_missing"},
		{"net.OpError", refused, "database_unavailable"},
		{"ECONNREFUSED", fmt.Errorf("dial: %w", syscall.ECONNREFUSED), "database_unavailable"},
		{"ECONNRESET", fmt.Errorf("read: %w", syscall.ECONNRESET), "database_unavailable"},
		{"pool acquire deadline", fmt.Errorf("acquire: %w", context.DeadlineExceeded), "database_unavailable"},
		{"conn closed", pgconn.ErrConnClosed, "database_unavailable"},
		{"tx closed", pgx.ErrTxClosed, "database_unavailable"},
		{"socket closed", fmt.Errorf("write: %w", net.ErrClosed), "database_unavailable"},
		{"unexpected EOF", fmt.Errorf("receive message: %w", io.ErrUnexpectedEOF), "database_unavailable"},
		{"no rows", pgx.ErrNoRows, "not_found"},
		{"no rows, wrapped", fmt.Errorf("scan: %w", pgx.ErrNoRows), "not_found"},
		{"caller went away", fmt.Errorf("query: %w", context.Canceled), ""},
		{"a plain bug", errors.New("cannot scan into *int"), ""},
	}
	for _, tc := range cases {
		checkTranslated(t, tc.name, translate(tc.err, "list servers"), tc.wantCode)
	}
}

// TestNoRows: the readers for whom no row is an answer see the driver's
// "no rows" however it is wrapped, and nothing else; missingRow is the
// NotFound translate gives it.
func TestNoRows(t *testing.T) {
	if !noRows(pgx.ErrNoRows) || !noRows(fmt.Errorf("scan: %w", pgx.ErrNoRows)) {
		t.Error("noRows misses the driver's no rows")
	}
	if noRows(nil) || noRows(errors.New("no rows in result set")) || noRows(&pgconn.PgError{Code: "23503"}) {
		t.Error("noRows takes another error for no rows")
	}
	err := missingRow(`read call "c1"`)
	if e, ok := apperr.As(err); !ok || e.Kind != apperr.NotFound || e.Code != "not_found" || !strings.Contains(e.Message, `read call "c1"`) {
		t.Errorf("missingRow: %v, want not_found naming the read", err)
	}
}

// TestTranslate_RealConnectionRefused: a real dial to a closed port.
func TestTranslate_RealConnectionRefused(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now
	conn, err := pgx.Connect(t.Context(), "postgres://postgres@"+addr+"/x?sslmode=disable&connect_timeout=2")
	if err == nil {
		conn.Close(t.Context())
		t.Fatal("connected to a closed port")
	}
	checkTranslated(t, "refused", translate(err, "connect"), "database_unavailable")
}

// connectErr is a real *pgconn.ConnectError (its fields are unexported)
// for a server that refuses the session with code.
func connectErr(t *testing.T, code string) error {
	t.Helper()
	cfg, err := pgconn.ParseConfig("postgres://postgres@127.0.0.1:1/x?sslmode=disable")
	if err != nil {
		t.Fatal(err)
	}
	cfg.DialFunc = func(context.Context, string, string) (net.Conn, error) {
		return nil, &pgconn.PgError{Severity: "FATAL", Code: code, Message: "refused"}
	}
	_, err = pgconn.ConnectConfig(t.Context(), cfg)
	var ce *pgconn.ConnectError
	if !errors.As(err, &ce) {
		t.Fatalf("connect: %T %v, want a ConnectError", err, err)
	}
	return err
}

func checkTranslated(t *testing.T, name string, err error, wantCode string) {
	t.Helper()
	e, ok := apperr.As(err)
	if wantCode == "" {
		if ok {
			t.Errorf("%s: %v is an apperr (%s), want an internal error", name, err, e.Code)
		}
		return
	}
	if !ok || e.Code != wantCode {
		t.Errorf("%s: %v, want code %s", name, err, wantCode)
		return
	}
	if wantCode == "database_unavailable" {
		if e.Kind != apperr.Unavailable || e.RetryAfter <= 0 {
			t.Errorf("%s: kind %s, Retry-After %d; want unavailable with a Retry-After", name, e.Kind, e.RetryAfter)
		}
		if strings.Contains(e.Message, "list servers") || strings.Contains(e.Message, "127.0.0.1") {
			t.Errorf("%s: the message leaks detail: %q", name, e.Message)
		}
		if e.Err == nil {
			t.Errorf("%s: the cause is lost (it is what the log shows)", name)
		}
	}
}
