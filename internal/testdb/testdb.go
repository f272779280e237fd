// Package testdb gives each test a real, migrated Postgres database of its
// own. It uses TEST_DATABASE_URL when set, else starts Postgres with
// testcontainers when Docker is available, else fails the test saying how to
// provide a database. It never skips.
package testdb

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	tcpostgres "github.com/testcontainers/testcontainers-go/modules/postgres"

	"github.com/toolgate/toolgate/db"
	"github.com/toolgate/toolgate/internal/postgres"
	"github.com/toolgate/toolgate/internal/postgres/migrate"
)

var (
	baseOnce sync.Once
	baseURL  string
	baseErr  error
	tmplOnce sync.Once
	tmplName string
	tmplErr  error
)

// New returns a pool on a fresh migrated database, dropped when t ends.
func New(t testing.TB) *pgxpool.Pool {
	t.Helper()
	u := URL(t)
	pool, err := pgxpool.New(context.Background(), u)
	if err != nil {
		t.Fatalf("testdb: open pool: %v", err)
	}
	t.Cleanup(pool.Close) // runs before the drop registered by URL
	return pool
}

// URL returns the URL of a fresh migrated database, dropped when t ends.
func URL(t testing.TB) string {
	t.Helper()
	base := server(t)
	tmplOnce.Do(func() { tmplName, tmplErr = template(base) })
	if tmplErr != nil {
		t.Fatalf("testdb: prepare the migrated template database: %v", tmplErr)
	}
	name := "toolgate_test_" + randomHex(6)
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatalf("testdb: connect: %v", err)
	}
	defer admin.Close(ctx)
	if _, err := admin.Exec(ctx, fmt.Sprintf("CREATE DATABASE %s TEMPLATE %s", name, tmplName)); err != nil {
		t.Fatalf("testdb: create database: %v", err)
	}
	dropOnCleanup(t, base, name)
	return withDatabase(base, name)
}

// dropOnCleanup drops database name, if it exists, when t ends.
func dropOnCleanup(t testing.TB, base, name string) {
	t.Cleanup(func() {
		ctx := context.Background()
		conn, err := pgx.Connect(ctx, base)
		if err != nil {
			t.Errorf("testdb: connect to drop %s: %v", name, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			t.Errorf("testdb: drop %s: %v", name, err)
		}
	})
}

func server(t testing.TB) string {
	t.Helper()
	baseOnce.Do(func() {
		if u := os.Getenv("TEST_DATABASE_URL"); u != "" {
			baseURL = u
			return
		}
		baseURL, baseErr = startContainer()
	})
	if baseErr != nil {
		t.Fatalf("testdb: no Postgres for tests. Set TEST_DATABASE_URL to a server this test may create "+
			"databases on, e.g. TEST_DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable, "+
			"or make a Docker engine available so testcontainers can start one. (testcontainers said: %v)", baseErr)
	}
	return baseURL
}

func startContainer() (u string, err error) {
	defer func() {
		if r := recover(); r != nil { // testcontainers panics on some Docker setups
			err = fmt.Errorf("testcontainers: %v", r)
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := tcpostgres.Run(ctx, "postgres:16-alpine", tcpostgres.WithDatabase("postgres"),
		tcpostgres.WithUsername("postgres"), tcpostgres.WithPassword("postgres"), tcpostgres.BasicWaitStrategies())
	if err != nil {
		return "", err
	}
	// The container lives as long as the test process; testcontainers' reaper removes it.
	return c.ConnectionString(context.Background(), "sslmode=disable")
}

// template creates, once per migration set, a migrated database that each
// test's database is copied from: copying is far faster than migrating.
func template(base string) (string, error) {
	ctx := context.Background()
	name := "toolgate_tmpl_" + migrationsDigest()
	admin, err := pgx.Connect(ctx, base)
	if err != nil {
		return "", err
	}
	defer admin.Close(ctx)
	// Test binaries of several packages run at once; one of them builds it.
	if _, err := admin.Exec(ctx, "SELECT pg_advisory_lock(7245001)"); err != nil {
		return "", err
	}
	defer admin.Exec(ctx, "SELECT pg_advisory_unlock(7245001)") //nolint:errcheck
	var exists bool
	if err := admin.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", name).Scan(&exists); err != nil {
		return "", err
	}
	if exists {
		return name, nil
	}
	building := name + "_wip"
	if _, err := admin.Exec(ctx, "DROP DATABASE IF EXISTS "+building+" WITH (FORCE)"); err != nil {
		return "", err
	}
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+building); err != nil {
		return "", err
	}
	pool, err := postgres.Open(ctx, withDatabase(base, building), false, slog.New(slog.DiscardHandler))
	if err != nil {
		return "", err
	}
	_, err = migrate.Up(ctx, pool)
	pool.Close()
	if err != nil {
		return "", err
	}
	// Renamed only once complete, so a crash never leaves a half-built template.
	if _, err := admin.Exec(ctx, "ALTER DATABASE "+building+" RENAME TO "+name); err != nil {
		return "", err
	}
	return name, nil
}

func migrationsDigest() string {
	h := sha256.New()
	_ = fs.WalkDir(db.Migrations, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, _ := fs.ReadFile(db.Migrations, path)
		fmt.Fprintf(h, "%s\n%d\n", path, len(b))
		h.Write(b)
		return nil
	})
	return hex.EncodeToString(h.Sum(nil))[:12]
}

func withDatabase(base, name string) string {
	u, err := url.Parse(base)
	if err != nil {
		panic(fmt.Sprintf("testdb: TEST_DATABASE_URL must be a postgres:// URL: %v", err))
	}
	u.Path = "/" + name
	return u.String()
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// MissingURL returns the URL of a database that does not exist yet, on the
// test server, and drops it (if something created it) when t ends.
func MissingURL(t testing.TB) string {
	t.Helper()
	base := server(t)
	name := "toolgate_test_" + randomHex(6)
	dropOnCleanup(t, base, name)
	return withDatabase(base, name)
}
