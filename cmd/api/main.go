// Command toolgate is Toolgate in one binary (built as bin/toolgate by
// make build, with the web app embedded; see frontend/webapp.go):
//
//	toolgate [serve]                 serve the API and the web app (migrations are applied at start)
//	toolgate migrate up|down|status
//	toolgate version                 the version, commit and build date stamped by make build
//	toolgate chat [flags]            a terminal client of a running Toolgate (chat.go)
//	toolgate inbox [flags]           decide what waits for you, from the terminal (inbox.go)
//	toolgate token create EMAIL [NAME]
//	toolgate link [EMAIL]            a new one-time sign-in link (AUTH_MODE=local)
//	toolgate healthcheck             exit 0 when the server at LISTEN_ADDR answers /healthz
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/toolgate/toolgate/internal/config"
	"github.com/toolgate/toolgate/internal/postgres"
	"github.com/toolgate/toolgate/internal/postgres/schema"
)

const usage = "usage: toolgate [serve | migrate up|down|status | version | chat [flags] | inbox [flags] | token create EMAIL [NAME] | link [EMAIL] | healthcheck]"

// help is printed by toolgate help (-h, --help).
const help = usage + `

  serve (the default)        serve the API and the web app at LISTEN_ADDR;
                             pending database migrations are applied first
  migrate up|down|status     apply the pending migrations, roll back the
                             last one, or list them
  version                    print the version, commit and build date
  chat [flags]               chat with a running Toolgate in the terminal
                             (toolgate chat -h lists its flags)
  inbox [flags]              decide what waits for you (your chats' and
                             agents' requests) in the terminal; --watch
                             waits for new ones (toolgate inbox -h)
  token create EMAIL [NAME]  print a new personal API token for the account
                             EMAIL (and nothing else, for TOKEN=$(...))
  link [EMAIL]               print a new one-time sign-in link (valid 1 hour)
                             for EMAIL, or for the demo or first admin
                             (a setup link before any account exists);
                             AUTH_MODE=local, on the server's machine
  healthcheck                exit 0 when the server at LISTEN_ADDR answers
                             GET /healthz, 1 otherwise (container health checks)

Settings come from the environment (DATABASE_URL, OPENAI_API_KEY, ...): see
docs/configuration.md.
`

// usageError is a command line that is none of the commands: main exits 2.
type usageError struct{ problem string }

func (e usageError) Error() string { return e.problem + "\n" + usage }

func main() {
	// The chat client talks to a running Toolgate over HTTP: it needs none
	// of the server's configuration (no DATABASE_URL) and handles its own
	// stdin, stdout and signals.
	if len(os.Args) > 1 && os.Args[1] == "chat" {
		os.Exit(runChat(os.Args[2:]))
	}
	if len(os.Args) > 1 && os.Args[1] == "inbox" {
		os.Exit(runInbox(os.Args[2:]))
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdout)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "toolgate:", err)
		if errors.As(err, new(usageError)) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}

// run is the whole program but chat; tests call it with their own env and
// context. The command line is checked before the configuration is read,
// so a mistyped command says so even when the environment is not set up.
func run(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	args, err := checkCommand(args)
	if err != nil {
		return err
	}
	switch command(args) {
	case "help", "-h", "--help":
		_, err := io.WriteString(stdout, help)
		return err
	case "version":
		return writeVersion(stdout, currentBuild())
	case "healthcheck":
		return healthcheck(ctx, getenv, stdout)
	}
	cfg, err := config.Load(getenv)
	if err != nil {
		return err
	}
	log := newLogger(cfg, stdout)
	switch command(args) {
	case "":
		return serve(ctx, cfg, log, stdout)
	case "migrate":
		return migrate(ctx, cfg, log, args[1], stdout)
	case "link":
		email := ""
		if len(args) == 2 {
			email = args[1]
		}
		// Only the link goes to stdout, as with token create.
		return printLink(ctx, cfg, slog.New(slog.DiscardHandler), email, stdout)
	default: // token create
		name := "terminal"
		if len(args) == 4 {
			name = args[3]
		}
		// Only the token goes to stdout, so that TOKEN=$(toolgate token create ...) works.
		return issueToken(ctx, cfg, slog.New(slog.DiscardHandler), args[2], name, stdout)
	}
}

// command is the command args name; "" is serve.
func command(args []string) string {
	if len(args) == 0 {
		return ""
	}
	return args[0]
}

// checkCommand refuses a command line that is none of the commands; serve
// comes back as no arguments.
func checkCommand(args []string) ([]string, error) {
	if command(args) == "serve" {
		if len(args) > 1 {
			return nil, usageError{"serve takes no arguments (settings come from the environment)"}
		}
		return nil, nil
	}
	if len(args) == 0 {
		return args, nil
	}
	if problem := commandProblem(args); problem != "" {
		return nil, usageError{problem}
	}
	return args, nil
}

// commandProblem says what is wrong with the arguments of args[0], or "".
func commandProblem(args []string) string {
	switch cmd := args[0]; cmd {
	case "help", "-h", "--help":
		return ""
	case "version":
		return unless(len(args) == 1, "version takes no arguments")
	case "healthcheck":
		return unless(len(args) == 1, "healthcheck takes no arguments (it checks LISTEN_ADDR)")
	case "migrate":
		return unless(len(args) == 2 && (args[1] == "up" || args[1] == "down" || args[1] == "status"), "migrate needs one of up, down or status")
	case "token":
		return unless(len(args) >= 3 && len(args) <= 4 && args[1] == "create", "token needs: token create EMAIL [NAME]")
	case "link":
		return unless(len(args) <= 2, "link takes at most one argument: link [EMAIL]")
	case "chat", "inbox":
		return cmd + " runs from main" // main dispatches it before run
	default:
		return fmt.Sprintf("unknown command %q", cmd)
	}
}

// unless is problem when ok is false, "" otherwise.
func unless(ok bool, problem string) string {
	if ok {
		return ""
	}
	return problem
}

func newLogger(cfg config.Config, w io.Writer) *slog.Logger {
	opts := &slog.HandlerOptions{Level: cfg.LogLevel}
	if cfg.LogFormat == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

func migrate(ctx context.Context, cfg config.Config, log *slog.Logger, cmd string, stdout io.Writer) error {
	pool, err := postgres.Open(ctx, cfg.DatabaseURL, cfg.CreateDatabase, log)
	if err != nil {
		return err
	}
	defer pool.Close()
	switch cmd {
	case "up":
		applied, err := schema.Up(ctx, pool)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "applied %d migration(s)\n", len(applied))
		for _, m := range applied {
			fmt.Fprintln(stdout, "  ", m)
		}
		return nil
	case "down":
		m, err := schema.Down(ctx, pool)
		if err != nil {
			return err
		}
		fmt.Fprintln(stdout, "rolled back", m)
		return nil
	case "status":
		return schema.Status(ctx, pool, stdout)
	}
	return fmt.Errorf("unknown migrate command %q: use up, down or status", cmd)
}
