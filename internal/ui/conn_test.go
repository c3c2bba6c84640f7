package ui

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/trialform/trialform/state"
)

// limitedServer serves an empty state with token "secret" within l.
func limitedServer(t *testing.T, l Limits) (*httptest.Server, *connLimiter) {
	t.Helper()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, ".trialform"), 0o755); err != nil {
		t.Fatal(err)
	}
	s := New(Options{StateDir: filepath.Join(dir, ".trialform"), WorkDir: dir, Token: "secret"})
	ts := httptest.NewUnstartedServer(s)
	hs, cl := httpServer(s, l)
	ts.Config = hs
	ts.Start()
	t.Cleanup(func() { ts.Close(); s.Close() })
	return ts, cl
}

// waitClosed blocks until the server closes c (a read returns EOF or a
// reset). The deadline only keeps a broken server from hanging the test.
func waitClosed(t *testing.T, c net.Conn, what string) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(2 * time.Minute))
	_, err := io.Copy(io.Discard, c)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("%s: the server kept the connection open", what)
	}
}

func authorizedOK(t *testing.T, ts *httptest.Server) {
	t.Helper()
	req, _ := http.NewRequest("GET", ts.URL+"/api/overview", nil)
	req.Header.Set("Authorization", "Bearer secret")
	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("the token's holder is locked out: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("with the token: %s", resp.Status)
	}
}

// Connections that get a 401 are closed by the server, so keep-alive
// clients without the token hold no file descriptors (issue 25 G).
func TestRefusedConnectionsAreClosed(t *testing.T) {
	ts, cl := limitedServer(t, Limits{})
	addr := ts.Listener.Addr().String()
	for i := 0; i < 100; i++ {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.WriteString(c, "GET /api/overview HTTP/1.1\r\nHost: "+addr+"\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized || !resp.Close {
			t.Fatalf("without a token: %s, close=%v; want 401 and Connection: close", resp.Status, resp.Close)
		}
		waitClosed(t, c, "after a 401")
		c.Close()
	}
	authorizedOK(t, ts)
	// The server forgets a connection just after closing it: wait for
	// that, not for a time.
	for deadline := time.Now().Add(time.Minute); cl.open() > 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d connections still open after 100 refused ones", cl.open())
		}
	}
}

// Past MaxConns, connections that never send a request are closed, oldest
// first, and the token's holder still gets in: the server's connections
// (its file descriptors) stay bounded.
func TestConnectionCap(t *testing.T) {
	ts, cl := limitedServer(t, Limits{MaxConns: 16, ReadHeaderTimeout: time.Hour, ReadTimeout: time.Hour})
	addr := ts.Listener.Addr().String()
	var conns []net.Conn
	for i := 0; i < 300; i++ {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		conns = append(conns, c)
	}
	// Accept takes connections in order: once this one is served, the
	// 300 before it were all accepted (and all but 16 closed).
	authorizedOK(t, ts)
	if n := cl.open(); n > 16 {
		t.Errorf("%d connections open, want at most 16", n)
	}
	for i, c := range conns[:300-16] {
		waitClosed(t, c, fmt.Sprintf("connection %d", i))
	}
}

// A keep-alive connection is closed once it has been idle IdleTimeout.
func TestIdleConnectionsClosed(t *testing.T) {
	ts, _ := limitedServer(t, Limits{IdleTimeout: 100 * time.Millisecond})
	addr := ts.Listener.Addr().String()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "GET /api/overview HTTP/1.1\r\nHost: "+addr+"\r\nAuthorization: Bearer secret\r\n\r\n")
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Close {
		t.Fatalf("%s close=%v, want 200 kept alive", resp.Status, resp.Close)
	}
	waitClosed(t, c, "an idle keep-alive connection")
}

// An event stream outlives ReadTimeout: it is a long response, not a slow
// request.
func TestEventStreamOutlivesReadTimeout(t *testing.T) {
	ts, _ := limitedServer(t, Limits{ReadTimeout: 50 * time.Millisecond})
	req, _ := http.NewRequest("GET", ts.URL+"/api/events", nil)
	req.Header.Set("Authorization", "Bearer secret")
	resp, err := ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	next := func() string {
		for {
			l, err := br.ReadString('\n')
			if err != nil {
				t.Fatalf("the event stream ended: %v", err)
			}
			if strings.HasPrefix(l, "event: ") {
				return strings.TrimSpace(l)
			}
		}
	}
	if e := next(); e != "event: hello" {
		t.Fatalf("first event %q", e)
	}
	time.Sleep(200 * time.Millisecond) // past ReadTimeout (however loaded the machine)
	sd := strings.TrimSuffix(ts.Config.Handler.(*Server).o.StateDir, "/")
	m := state.NewManager(sd)
	st, err := m.Load()
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Save(st); err != nil {
		t.Fatal(err)
	}
	if e := next(); e != "event: state" {
		t.Fatalf("after a save: %q", e)
	}
}
