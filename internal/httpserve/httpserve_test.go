package httpserve

import (
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"testing"
	"time"
)

// TestShutdown_DoesNotWaitForConnectionsThatSentNothing: a client's spare
// connection, dialed and never used, must not hold a shutdown for the 5
// seconds http.Server gives a new connection.
func TestShutdown_DoesNotWaitForConnectionsThatSentNothing(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}), ReadHeaderTimeout: time.Minute}
	s := Start(srv, ln)
	idle, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	// The server has accepted it (StateNew) once a request on another
	// connection has been answered.
	res, err := http.Get("http://" + ln.Addr().String() + "/")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	time.Sleep(50 * time.Millisecond)
	began := time.Now()
	if err := s.Shutdown(context.Background(), 30*time.Second); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(began); d > 2*time.Second {
		t.Errorf("shutdown took %v with a connection that sent nothing open; want it closed at once", d)
	}
}

// TestShutdown_ClosesAConnectionThatReportsItselfNewOnlyAfterShutdownBegan:
// a connection accepted before the listener closed whose goroutine only
// runs later (a busy machine) reaches StateNew after the fresh ones were
// closed; it is closed at once too, not given net/http's 5 seconds.
func TestShutdown_ClosesAConnectionThatReportsItselfNewOnlyAfterShutdownBegan(t *testing.T) {
	s := &Server{fresh: map[net.Conn]bool{}}
	s.closeFresh()
	client, server := net.Pipe()
	defer client.Close()
	s.track(server, http.StateNew)
	_ = client.SetReadDeadline(time.Now().Add(time.Second))
	if _, err := client.Read(make([]byte, 1)); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("reading from the late connection: %v; want it closed by the server", err)
	}
	if len(s.fresh) != 0 {
		t.Errorf("the late connection is kept as fresh: %v", s.fresh)
	}
}
