package auth_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/apperr"
	"github.com/toolgate/toolgate/internal/auth"
	"github.com/toolgate/toolgate/internal/postgres/authdb"
	"github.com/toolgate/toolgate/internal/testdb"
)

// TestLogin_GuessesSpreadOverAddressesAreCappedPerAccount: an attacker with
// many addresses gets MaxFailures guesses per address but no more than
// MaxAccountFailures for the account in all; the account's owner signing in
// afterwards from their own address is refused too until the window passes,
// then gets in, and that clears the count.
func TestLogin_GuessesSpreadOverAddressesAreCappedPerAccount(t *testing.T) {
	pool := testdb.New(t)
	ctx := context.Background()
	svc := auth.New(authdb.Stores(pool), auth.Options{Mode: auth.ModeLocal, MaxFailures: 3,
		MaxAccountFailures: 7, FailureWindow: 15 * time.Minute}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	now := time.Now().Round(time.Second)
	svc.SetClock(func() time.Time { return now })
	if _, _, err := svc.Accounts.EnsureAdmin(ctx, "ann@example.com", "the right passphrase"); err != nil {
		t.Fatal(err)
	}
	checked := 0
	for addr := 1; addr <= 5; addr++ {
		for try := 0; try < 3; try++ {
			_, err := svc.SignIn.Login(ctx, "ann@example.com", "wrong guess", auth.Client{Addr: fmt.Sprintf("198.51.100.%d", addr)})
			switch code := codeOf(err); code {
			case "invalid_credentials":
				checked++
			case "too_many_attempts":
			default:
				t.Fatalf("guess from address %d: %v", addr, err)
			}
		}
	}
	if checked != 7 {
		t.Errorf("%d guesses were checked against the password over 5 addresses, want 7 (the account cap)", checked)
	}
	_, err := svc.SignIn.Login(ctx, "ann@example.com", "the right passphrase", auth.Client{Addr: "203.0.113.9"})
	if e, ok := apperr.As(err); !ok || e.Code != "too_many_attempts" || e.RetryAfter <= 0 {
		t.Errorf("the owner within the window: %v, want too_many_attempts with Retry-After", err)
	}
	now = now.Add(16 * time.Minute)
	if _, err := svc.SignIn.Login(ctx, "ann@example.com", "the right passphrase", auth.Client{Addr: "203.0.113.9"}); err != nil {
		t.Fatalf("the owner after the window: %v", err)
	}
	var left int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM login_failures WHERE key LIKE '%ann@example.com%' AND at > $1`, now.Add(-15*time.Minute)).Scan(&left); err != nil {
		t.Fatal(err)
	}
	if left != 0 {
		t.Errorf("%d failures still counted after the owner signed in, want 0", left)
	}
}

func codeOf(err error) string {
	if e, ok := apperr.As(err); ok {
		return e.Code
	}
	return fmt.Sprint(err)
}
