package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"

	"github.com/toolgate/toolgate/internal/termchat"
)

const inboxUsage = `usage: toolgate inbox [--url URL] [--token TOKEN] [--watch]

What waits for your decision, from your chats and your agents (the web app's
"Waiting for me"): each request is shown as its card and asked in turn, and
each decision is sent as you make it. A chat then goes on in the background;
an agent's held call runs or gets the denial. With --watch, it then waits
for new requests and asks each as it comes, until Ctrl-C or Ctrl-D. It needs
a personal API token: toolgate token create EMAIL, or the web app's user
menu → API tokens.

For each request:
  ` + termchat.DecisionKeys + `
Ctrl-C at a question sends nothing (the request stays waiting) and quits.

Flags:`

// runInbox implements `toolgate inbox`; it returns the exit code.
func runInbox(args []string) int {
	fs := flag.NewFlagSet("toolgate inbox", flag.ContinueOnError)
	fs.SetOutput(os.Stderr)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), inboxUsage)
		fs.PrintDefaults()
	}
	defURL := os.Getenv("TOOLGATE_URL")
	if defURL == "" {
		defURL = termchat.DefaultURL
	}
	baseURL := fs.String("url", defURL, "Toolgate's URL (env TOOLGATE_URL)")
	token := fs.String("token", "", "a personal API token, tg_… (env TOOLGATE_TOKEN)")
	watch := fs.Bool("watch", false, "once nothing waits, wait for new requests and ask each as it comes")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return termchat.ExitOK
		}
		return termchat.ExitUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "toolgate inbox: unexpected argument %q (flags only)\n", fs.Arg(0))
		return termchat.ExitUsage
	}
	if *token == "" {
		*token = os.Getenv("TOOLGATE_TOKEN")
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt)
	defer signal.Stop(sigs)
	ints := make(chan struct{}, 1)
	go func() {
		for range sigs {
			select {
			case ints <- struct{}{}:
			default:
			}
		}
	}()
	return termchat.RunInbox(context.Background(), termchat.InboxConfig{
		URL: *baseURL, Token: *token, Watch: *watch,
		In: os.Stdin, Out: os.Stdout, Err: os.Stderr, Interrupts: ints,
	})
}
