package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"

	"github.com/toolgate/toolgate/internal/termchat"
)

const chatUsage = `usage: toolgate chat [--url URL] [--token TOKEN] [--conversation ID] [MESSAGE...]

Chat with a running Toolgate from the terminal. With MESSAGE, send it, answer
its approval requests and exit; without, read messages line by line. It needs
a personal API token: toolgate token create EMAIL, or the web app's user
menu → API tokens.

When a tool asks for approval:
  ` + termchat.DecisionKeys + `
Ctrl-C cancels a running turn (or the approval questions); Ctrl-C or Ctrl-D at
the prompt quits.

Flags (flags come before MESSAGE):`

// runChat implements `toolgate chat`: it reads the flags and environment
// and hands the terminal to internal/termchat. It returns the exit code.
func runChat(args []string) int {
	fs := flag.NewFlagSet("toolgate chat", flag.ContinueOnError)
	fs.SetOutput(os.Stderr)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), chatUsage)
		fs.PrintDefaults()
	}
	defURL := os.Getenv("TOOLGATE_URL")
	if defURL == "" {
		defURL = termchat.DefaultURL
	}
	baseURL := fs.String("url", defURL, "Toolgate's URL (env TOOLGATE_URL)")
	// No default shown: -h must not print the token from the environment.
	token := fs.String("token", "", "a personal API token, tg_… (env TOOLGATE_TOKEN)")
	conv := fs.String("conversation", "", "continue this conversation (conv_…); default: a new one")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return termchat.ExitOK
		}
		return termchat.ExitUsage
	}
	if *token == "" {
		*token = os.Getenv("TOOLGATE_TOKEN")
	}
	msg := strings.TrimSpace(strings.Join(fs.Args(), " "))
	if len(fs.Args()) > 0 && msg == "" {
		fmt.Fprintln(os.Stderr, "toolgate chat: the message is empty")
		return termchat.ExitUsage
	}

	// Ctrl-C goes to the client, which decides: cancel the running turn,
	// or quit at the prompt.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt)
	defer signal.Stop(sigs)
	ints := make(chan struct{}, 1)
	go func() {
		for range sigs {
			select {
			case ints <- struct{}{}:
			default: // one pending Ctrl-C is enough
			}
		}
	}()
	return termchat.Run(context.Background(), termchat.Config{
		URL: *baseURL, Token: *token, Conversation: *conv, Message: msg,
		In: os.Stdin, Out: os.Stdout, Err: os.Stderr, Interrupts: ints,
	})
}
