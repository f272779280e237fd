package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/toolgate/toolgate/internal/termchat"
	"github.com/toolgate/toolgate/internal/testdb"
)

// TestChat_InATerminal runs `toolgate chat`, the built binary, inside a
// real pseudo-terminal against a real Toolgate (offline emulator and demo
// MCP server), and checks what a person sees and what their keys do.
func TestChat_InATerminal(t *testing.T) {
	env := map[string]string{"DATABASE_URL": testdb.URL(t), "USER_MESSAGES_PER_MINUTE": "1000"}
	base, _, _ := start(t, env)
	var out bytes.Buffer
	if err := run(context.Background(), []string{"token", "create", testAdminEmail, "terminal"}, func(k string) string { return env[k] }, &out); err != nil {
		t.Fatalf("token create: %v", err)
	}
	token := strings.TrimSpace(out.String())
	bin := buildToolgate(t)
	chatEnv := []string{"TOOLGATE_URL=" + base, "TOOLGATE_TOKEN=" + token}

	t.Run("the answer streams as it arrives", func(t *testing.T) {
		tm := startChat(t, bin, chatEnv)
		tm.expect("signed in as " + testAdminEmail)
		tm.expect("you> ")
		// Three pieces, 250 ms apart: the first is on the screen while the
		// last has not arrived.
		tm.send("[emulator: event-delay=250ms; deltas=3] hello there\r")
		tm.expect("(conversation conv_")
		tm.expect("This is the Toolgate Responses emulator")
		if strings.Contains(tm.screen(), "Tools available") {
			t.Errorf("the whole answer came at once, not as it streamed:\n%s", tm.screen())
		}
		tm.expect("Tools available: demo.delete_forecast")
		tm.expect("you> ")
		tm.send("\x04") // Ctrl-D quits
		tm.exitCode(0)
	})

	t.Run("approve once runs the tool and the answer shows its result", func(t *testing.T) {
		tm := startChat(t, bin, chatEnv)
		tm.expect("you> ")
		tm.send(`delete_forecast {"city": "Oslo"}` + "\r")
		tm.expect("── Approval needed: delete_forecast on demo")
		tm.expect("Delete forecast") // the tool's title
		tm.expect("Hints from the MCP server (not verified): destructive")
		tm.expect("Asks because it is not read-only.")
		tm.expect(`"city": "Oslo"`)
		tm.expect("\n" + termchat.DecisionKeys + "\r\n> ")
		tm.send("x\r") // not a key: asked again
		tm.expect("Please type one of y, c, h, a, n, b, r, e or s")
		tm.expect("\n" + termchat.DecisionKeys + "\r\n> ")
		tm.send("y\r")
		tm.expect("· delete_forecast on demo: approved")
		tm.expect("· ran delete_forecast on demo (approved)")
		tm.expect("The tool delete_forecast on demo returned:")
		tm.expect("Deleted the forecast for Oslo.")
		tm.expect("you> ")
		tm.send("\x03") // Ctrl-C at the prompt quits
		tm.exitCode(0)
	})

	t.Run("deny with a reason: the model's answer gives it", func(t *testing.T) {
		tm := startChat(t, bin, chatEnv)
		tm.expect("you> ")
		tm.send(`delete_forecast {"city": "Berlin"}` + "\r")
		tm.expect(termchat.DecisionKeys + "\r\n> ")
		tm.send("r\r")
		tm.expect("reason> ")
		tm.send("keep Berlin\r")
		tm.expect(`· delete_forecast on demo: denied: "keep Berlin"`)
		tm.expect(`I did not run delete_forecast on demo because the request was denied. Reason given: "keep Berlin".`)
		tm.expect("you> ")
		if strings.Contains(tm.screen(), "ran delete_forecast") {
			t.Errorf("a denied tool ran:\n%s", tm.screen())
		}
		tm.send("get_forecast {\"city\": \"Berlin\"}\r") // runs without asking: Berlin is still there
		tm.expect("· running get_forecast on demo…")
		tm.expect("· ran get_forecast on demo (runs without asking)")
		tm.expect("Light rain clearing by evening")
		tm.expect("you> ")
		tm.send("\x04")
		tm.exitCode(0)
	})

	t.Run("always: the next call does not ask", func(t *testing.T) {
		tm := startChat(t, bin, chatEnv)
		tm.expect("you> ")
		tm.send(`send_alert {"city": "Lisbon", "message": "heat"}` + "\r")
		tm.expect("── Approval needed: send_alert on demo")
		tm.expect(termchat.DecisionKeys + "\r\n> ")
		tm.send("a\r")
		tm.expect("· send_alert on demo: approved, and it will not ask you again")
		tm.expect(`Sent a weather alert for Lisbon: "heat".`)
		tm.expect("you> ")
		tm.send(`send_alert {"city": "Lisbon", "message": "again"}` + "\r")
		tm.expect("· ran send_alert on demo (runs without asking)")
		tm.expect(`Sent a weather alert for Lisbon: "again".`)
		tm.expect("you> ")
		if n := strings.Count(tm.screen(), "Approval needed"); n != 1 {
			t.Errorf("asked %d times, want once:\n%s", n, tm.screen())
		}
		tm.send("\x04")
		tm.exitCode(0)
	})

	t.Run("this conversation: the next call in it does not ask, a new conversation asks", func(t *testing.T) {
		tm := startChat(t, bin, chatEnv)
		tm.expect("you> ")
		tm.send(`set_forecast {"city": "Rome", "summary": "Sun", "temperature_c": 25}` + "\r")
		tm.expect(termchat.DecisionKeys + "\r\n> ")
		tm.send("c\r")
		tm.expect("· set_forecast on demo: approved, for the rest of this conversation")
		tm.expect("you> ")
		tm.send(`set_forecast {"city": "Rome", "summary": "Rain", "temperature_c": 18}` + "\r")
		tm.expect("· ran set_forecast on demo (allowed for this conversation)")
		tm.expect("Updated the forecast for Rome: Rain")
		tm.expect("you> ")
		tm.send("\x04")
		tm.exitCode(0)

		tm = startChat(t, bin, chatEnv)
		tm.expect("you> ")
		tm.send(`set_forecast {"city": "Rome", "summary": "Fog", "temperature_c": 9}` + "\r")
		tm.expect("── Approval needed: set_forecast on demo")
		tm.expect(termchat.DecisionKeys + "\r\n> ")
		tm.send("n\r")
		tm.expect("· set_forecast on demo: denied")
		tm.expect("I did not run set_forecast on demo because the request was denied (no reason was given).")
		tm.send("\x04")
		tm.exitCode(0)
	})

	t.Run("several approvals in one turn are asked in turn and sent together", func(t *testing.T) {
		tm := startChat(t, bin, chatEnv)
		tm.expect("you> ")
		tm.send(`delete_forecast {"city": "Lisbon"} and then reset_forecasts` + "\r")
		tm.expect("── Approval needed (1 of 2): delete_forecast on demo")
		tm.expect(termchat.DecisionKeys + "\r\n> ")
		tm.send("y\r")
		tm.expect("── Approval needed (2 of 2): reset_forecasts on demo")
		if strings.Contains(tm.screen(), "· delete_forecast on demo: approved") {
			t.Errorf("the first decision was sent before the second was asked:\n%s", tm.screen())
		}
		tm.expect(termchat.DecisionKeys + "\r\n> ")
		tm.send("r\r")
		tm.expect("reason> ")
		tm.send("not everything\r")
		tm.expect("· delete_forecast on demo: approved")
		tm.expect(`· reset_forecasts on demo: denied: "not everything"`)
		tm.expect("Deleted the forecast for Lisbon.")
		tm.expect("you> ")
		answer := tm.screen()[strings.LastIndex(tm.screen(), "reset_forecasts on demo: denied"):]
		if !strings.Contains(answer, `I did not run reset_forecasts on demo because the request was denied. Reason given: "not everything".`) {
			t.Errorf("one answer does not cover both decisions:\n%s", tm.screen())
		}
		tm.send("\x04")
		tm.exitCode(0)
	})

	t.Run("Ctrl-C at a pending approval: nothing is decided, back to the prompt", func(t *testing.T) {
		tm := startChat(t, bin, chatEnv)
		tm.expect("you> ")
		tm.send(`delete_forecast {"city": "Paris"}` + "\r")
		tm.expect(termchat.DecisionKeys + "\r\n> ")
		tm.send("\x03")
		tm.expect("Cancelled: no decision was sent.")
		tm.expect("you> ")
		conv := tm.conversation()
		var st struct {
			PendingApprovals []struct {
				State string `json:"state"`
			} `json:"pending_approvals"`
		}
		getJSON(t, base+"/api/conversations/"+conv, token, &st)
		if len(st.PendingApprovals) != 1 || st.PendingApprovals[0].State != "pending" {
			t.Errorf("after Ctrl-C the request should still be pending: %+v", st)
		}
		// The client goes on: the next message supersedes the request.
		tm.send("hello\r")
		tm.expect("· delete_forecast on demo: superseded")
		tm.expect(`I did not run delete_forecast on demo because the request was denied. Reason given: "The user sent a new message`)
		tm.expect("you> ")
		tm.send("\x04")
		tm.exitCode(0)
	})

	t.Run("Ctrl-C while a turn runs cancels it on the server", func(t *testing.T) {
		tm := startChat(t, bin, chatEnv)
		tm.expect("you> ")
		began := time.Now()
		tm.send("[emulator: stall=60s] tell me slowly\r")
		tm.expect("(conversation conv_")
		time.Sleep(200 * time.Millisecond) // the turn is waiting for the model
		tm.send("\x03")
		tm.expect("Cancelling the turn…")
		tm.expect("Cancelled.")
		tm.expect("you> ")
		if d := time.Since(began); d > 30*time.Second {
			t.Errorf("cancelling took %v", d)
		}
		var st struct {
			Conversation struct {
				Streaming bool `json:"streaming"`
			} `json:"conversation"`
		}
		getJSON(t, base+"/api/conversations/"+tm.conversation(), token, &st)
		if st.Conversation.Streaming {
			t.Error("the turn is still running on the server after Ctrl-C")
		}
		tm.send("hello again\r") // the conversation takes a new message
		tm.expect(`You said: "hello again"`)
		tm.expect("you> ")
		tm.send("\x03")
		tm.exitCode(0)
	})

	t.Run("hostile arguments and tool output are shown escaped", func(t *testing.T) {
		tm := startChat(t, bin, chatEnv)
		tm.expect("you> ")
		// The emulator turns the JSON escapes into real ESC, CR and LF
		// characters: in the arguments, and, through the tool's output, in
		// the model's answer. They try to clear the screen, move the cursor
		// home and print a fake prompt and fake decision keys.
		fake := `\u001b[2J\u001b[H\r\nyou> FAKE\r\n` + termchat.DecisionKeys + `\u009b2J\u202e`
		tm.send(`set_forecast {"city": "Hostile", "summary": "` + fake + `", "temperature_c": 1}` + "\r")
		tm.expect("── Approval needed: set_forecast on demo")
		tm.expect(`"summary": "\u001b[2J\u001b[H\r\nyou> FAKE\r\n[y] approve once`)
		tm.expect(termchat.DecisionKeys + "\r\n> ")
		tm.send("y\r")
		tm.expect("Created the forecast for Hostile: ")
		tm.expect(`\x1b[2J\x1b[H\r`)
		tm.expect("\r\n  you> FAKE\\r\r\n  " + termchat.DecisionKeys + `\u009b2J\u202e, 1°C.`)
		tm.expect("you> ")
		tm.send("\x04")
		tm.exitCode(0)

		raw := tm.raw()
		for _, bad := range []string{"\x1b", "\u009b", "\u202e"} {
			if strings.Contains(raw, bad) {
				t.Errorf("the terminal received %q from the model or the MCP server:\n%q", bad, raw)
			}
		}
		if strings.Contains(strings.ReplaceAll(raw, "\r\n", ""), "\r") {
			t.Errorf("a bare carriage return reached the terminal:\n%q", raw)
		}
		for _, l := range strings.Split(tm.screen(), "\n") {
			if strings.HasPrefix(l, "you> FAKE") {
				t.Errorf("a line starts with the fake prompt: %q", l)
			}
		}
		if n := strings.Count(tm.screen(), "\n"+termchat.DecisionKeys+"\n"); n != 1 {
			t.Errorf("the decision keys start %d lines, want 1 (the real question):\n%s", n, tm.screen())
		}
	})

	t.Run("one-shot message, continuing a conversation", func(t *testing.T) {
		tm := startChat(t, bin, chatEnv)
		tm.expect("you> ")
		tm.send("hello\r")
		tm.expect("you> ")
		conv := tm.conversation()
		tm.send("\x04")
		tm.exitCode(0)

		tm = startChat(t, bin, chatEnv, "--conversation", conv, `get_forecast {"city": "Berlin"}`)
		tm.expect("Light rain clearing by evening")
		tm.exitCode(0)
		if strings.Contains(tm.screen(), "you> ") {
			t.Errorf("one-shot mode prompted:\n%s", tm.screen())
		}
		var st struct {
			Items []struct {
				Type string `json:"type"`
			} `json:"items"`
		}
		getJSON(t, base+"/api/conversations/"+conv, token, &st)
		users := 0
		for _, it := range st.Items {
			if it.Type == "user_message" {
				users++
			}
		}
		if users != 2 {
			t.Errorf("the one-shot message did not continue the conversation: %d user messages", users)
		}
	})

	// What the web card says, the terminal says: why it asks when argument
	// rules or "ask for everything" apply, the time left, and the card's
	// choices (1 hour, deny and block, deny with a correction).
	t.Run("the card's reasons, countdown and choices", func(t *testing.T) {
		putJSON(t, base+"/api/mcp/servers/demo/tools/get_forecast/rules", token,
			`{"rules":[{"when":"args.city == \"Nowhere\"","decision":"ask"}]}`)
		tm := startChat(t, bin, chatEnv)
		tm.expect("you> ")
		tm.send(`get_forecast {"city": "Nowhere"}` + "\r")
		tm.expect("── Approval needed: get_forecast on demo")
		tm.expect("Asks because argument rules apply and none decided.")
		tm.expect(`Rule 1 of this tool's rules says ask: args.city == "Nowhere"`)
		tm.expect("Expires in ") // APPROVAL_TTL: 30m
		if !regexp.MustCompile(`Expires in (30:00|29:[0-5]\d) \(at \d\d:\d\d:\d\d `).MatchString(tm.screen()) {
			t.Errorf("no countdown from 30 minutes on the card:\n%s", tm.screen())
		}
		tm.expect(termchat.DecisionKeys + "\r\n> ")
		tm.send("n\r")
		tm.expect("· get_forecast on demo: denied")
		tm.expect("you> ")

		// Deny with a correction: the model asks again with the new arguments.
		tm.send(`delete_forecast {"city": "Oslo"}` + "\r")
		tm.expect(termchat.DecisionKeys + "\r\n> ")
		tm.send("e\r")
		tm.expect("correction> ")
		tm.send(`{"city": "Paris"}` + "\r")
		tm.expect("reason> ")
		tm.send("wrong city\r")
		tm.expect("· delete_forecast on demo: denied")
		tm.expect("── Approval needed: delete_forecast on demo")
		tm.expect("Changed since your correction: It matches your correction.")
		tm.expect(`city: "Oslo" → "Paris"`)
		tm.expect(`"city": "Paris"`)
		tm.expect(termchat.DecisionKeys + "\r\n> ")
		tm.send("n\r")
		tm.expect("you> ")

		// Deny always: blocked for this person.
		tm.send("reset_forecasts\r")
		tm.expect(termchat.DecisionKeys + "\r\n> ")
		tm.send("b\r")
		tm.expect("· reset_forecasts on demo: denied, and it is blocked for you")
		tm.expect("you> ")

		// Approve for 1 hour: a new conversation runs it without asking.
		tm.send(`set_forecast {"city": "Oslo", "summary": "Snow", "temperature_c": -3}` + "\r")
		tm.expect(termchat.DecisionKeys + "\r\n> ")
		tm.send("h\r")
		tm.expect("· set_forecast on demo: approved, for 1 hour in all your conversations")
		tm.expect("you> ")
		tm.send("\x04")
		tm.exitCode(0)
		tm = startChat(t, bin, chatEnv)
		tm.expect("you> ")
		tm.send(`set_forecast {"city": "Oslo", "summary": "Sleet", "temperature_c": 0}` + "\r")
		tm.expect("· ran set_forecast on demo (allowed for a while)")
		tm.expect("you> ")

		// Ask for everything: even a tool that runs without asking asks.
		putJSON(t, base+"/api/settings", token, `{"ask_everything": true}`)
		t.Cleanup(func() { putJSON(t, base+"/api/settings", token, `{"ask_everything": false}`) })
		tm.send(`list_forecasts` + "\r")
		tm.expect("── Approval needed: list_forecasts on demo")
		tm.expect("Asks because an admin turned on “ask for everything”.")
		tm.expect(termchat.DecisionKeys + "\r\n> ")
		tm.send("n\r")
		tm.expect("you> ")
		tm.send("\x04")
		tm.exitCode(0)
	})

	t.Run("errors say what to do", func(t *testing.T) {
		tm := startChat(t, bin, []string{"TOOLGATE_URL=" + base})
		tm.expect("toolgate token create EMAIL")
		tm.expect("API tokens")
		tm.exitCode(2)

		tm = startChat(t, bin, []string{"TOOLGATE_URL=" + base, "TOOLGATE_TOKEN=tg_notatoken"})
		tm.expect("the token was refused: it is invalid, revoked or expired")
		tm.exitCode(1)

		dead := "http://" + freeAddr(t)
		tm = startChat(t, bin, []string{"TOOLGATE_TOKEN=" + token}, "--url", dead)
		tm.expect("cannot reach Toolgate at " + dead)
		tm.exitCode(1)

		tm = startChat(t, bin, chatEnv, "--conversation", "conv_000000000000000000000000", "hi")
		tm.expect("conversation_not_found")
		tm.exitCode(1)

		tm = startChat(t, bin, chatEnv, "--bogus")
		tm.expect("usage: toolgate chat")
		tm.exitCode(2)
	})
}

// buildToolgate builds the toolgate binary, as `make build` does (without
// the web app).
func buildToolgate(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "toolgate")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// terminal is `toolgate chat` running in a pseudo-terminal.
type terminal struct {
	t      *testing.T
	f      *os.File
	cmd    *exec.Cmd
	mu     sync.Mutex
	out    bytes.Buffer
	pos    int // expect looks from here on
	exited chan struct{}
	state  *os.ProcessState
}

func startChat(t *testing.T, bin string, env []string, args ...string) *terminal {
	t.Helper()
	return startTerminal(t, bin, env, append([]string{"chat"}, args...)...)
}

// startTerminal runs the binary with args in a pseudo-terminal.
func startTerminal(t *testing.T, bin string, env []string, args ...string) *terminal {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "TERM=xterm"}, env...)
	f, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 50, Cols: 250})
	if err != nil {
		t.Fatal(err)
	}
	tm := &terminal{t: t, f: f, cmd: cmd, exited: make(chan struct{})}
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		buf := make([]byte, 4096)
		for {
			n, err := f.Read(buf)
			tm.mu.Lock()
			tm.out.Write(buf[:n])
			tm.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	go func() {
		_ = cmd.Wait()
		<-copied // everything it wrote is read (the pty reports EIO once it is gone)
		tm.state = cmd.ProcessState
		close(tm.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-tm.exited:
		default:
			_ = cmd.Process.Kill()
			<-tm.exited
		}
		f.Close()
	})
	return tm
}

func (tm *terminal) raw() string {
	tm.mu.Lock()
	defer tm.mu.Unlock()
	return tm.out.String()
}

// screen is what the terminal shows, as lines joined with "\n".
func (tm *terminal) screen() string { return strings.ReplaceAll(tm.raw(), "\r\n", "\n") }

func (tm *terminal) send(s string) {
	tm.t.Helper()
	if _, err := tm.f.Write([]byte(s)); err != nil {
		tm.t.Fatalf("typing %q: %v", s, err)
	}
}

// expect waits until s appears after what the last expect matched.
func (tm *terminal) expect(s string) {
	tm.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		raw := tm.raw()
		if i := strings.Index(raw[tm.pos:], s); i >= 0 {
			tm.pos += i + len(s)
			return
		}
		select {
		case <-tm.exited:
			if raw = tm.raw(); !strings.Contains(raw[tm.pos:], s) {
				tm.t.Fatalf("toolgate chat exited (%v) without showing %q; the terminal shows:\n%s", tm.state, s, tm.screen())
			}
			continue
		default:
		}
		if time.Now().After(deadline) {
			tm.t.Fatalf("the terminal did not show %q; it shows:\n%s", s, tm.screen())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (tm *terminal) exitCode(want int) {
	tm.t.Helper()
	select {
	case <-tm.exited:
	case <-time.After(15 * time.Second):
		tm.t.Fatalf("toolgate chat did not exit; the terminal shows:\n%s", tm.screen())
	}
	if got := tm.state.ExitCode(); got != want {
		tm.t.Errorf("exit code %d, want %d; the terminal shows:\n%s", got, want, tm.screen())
	}
}

var convRE = regexp.MustCompile(`\(conversation (conv_[0-9a-f]+);`)

// conversation is the id of the conversation the client said it started.
func (tm *terminal) conversation() string {
	tm.t.Helper()
	m := convRE.FindStringSubmatch(tm.raw())
	if m == nil {
		tm.t.Fatalf("no conversation id on the terminal:\n%s", tm.screen())
	}
	return m[1]
}

func putJSON(t *testing.T, url, token, body string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPut, url, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	if res.StatusCode != 200 {
		t.Fatalf("PUT %s: %d %s", url, res.StatusCode, raw)
	}
}

func getJSON(t *testing.T, url, token string, out any) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	if res.StatusCode != 200 {
		t.Fatalf("GET %s: %d %s", url, res.StatusCode, raw)
	}
	if err := json.Unmarshal(raw, out); err != nil {
		t.Fatal(err)
	}
}
