package command

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trialform/trialform/controller"
	"github.com/trialform/trialform/state"
	k8sstate "github.com/trialform/trialform/state/kubernetes"
)

// TestHookAuthorized: the webhook secret in each form a forge sends it;
// the signature case is GitHub's documented example (secret "It's a
// Secret to Everybody", payload "Hello, World!").
func TestHookAuthorized(t *testing.T) {
	const secret = "It's a Secret to Everybody"
	body := []byte("Hello, World!")
	sig := "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
	for _, tc := range []struct {
		name, header, value string
		want                bool
	}{
		{"bearer", "Authorization", "Bearer " + secret, true},
		{"bearer wrong", "Authorization", "Bearer nope", false},
		{"basic is not bearer", "Authorization", "Basic " + secret, false},
		{"gitlab", "X-Gitlab-Token", secret, true},
		{"gitlab wrong", "X-Gitlab-Token", secret + "x", false},
		{"github signature", "X-Hub-Signature-256", sig, true},
		{"github signature upper case", "X-Hub-Signature-256", "sha256=757107EA0EB2509FC211221CCE984B8A37570B6D7586C22C46F4379C8B043E17", true},
		{"github signature of another body", "X-Hub-Signature-256", "sha256=" + sig[len(sig)-64:len(sig)-1] + "0", false},
		{"sha1 signature is not enough", "X-Hub-Signature", "sha1=01dc10d0c83e72ed246219cdd91669667fe2ca59", false},
		{"nothing", "", "", false},
	} {
		h := http.Header{}
		if tc.header != "" {
			h.Set(tc.header, tc.value)
		}
		if got := hookAuthorized(secret, h, body); got != tc.want {
			t.Errorf("%s: authorized %v, want %v", tc.name, got, tc.want)
		}
	}
}

// hookBody is a request body of n bytes made as it is read, counting
// what was read; after block bytes it waits for release (closed), and
// says so once on blocked.
type hookBody struct {
	n, read, block int64
	blocked        chan struct{}
	release        chan struct{}
	once           sync.Once
}

func (b *hookBody) Read(p []byte) (int, error) {
	if b.read >= b.n {
		return 0, io.EOF
	}
	if b.release != nil && b.read >= b.block {
		b.once.Do(func() { b.blocked <- struct{}{} })
		<-b.release
	}
	k := min(int64(len(p)), b.n-b.read)
	for i := range p[:k] {
		p[i] = 'x'
	}
	b.read += k
	return int(k), nil
}

func (b *hookBody) Close() error { return nil }

func hookCtrl() *ctrl {
	return &ctrl{hookToken: "s3cret", metrics: controller.NewMetrics(), log: slog.New(slog.NewTextHandler(io.Discard, nil)), wake: make(chan struct{}, 1)}
}

// TestHookRefusesUnread: a wrong header token is refused before any of
// the body is read, and an oversized signed body is refused after at
// most maxHookBody+1 bytes (it was read up to 25 MB before the secret
// was checked: 20 such requests took the controller from 37 to 691 MB).
func TestHookRefusesUnread(t *testing.T) {
	c := hookCtrl()
	for _, h := range [][2]string{{"Authorization", "Bearer nope"}, {"X-Gitlab-Token", "nope"}, {"", ""}} {
		body := &hookBody{n: 26 << 20}
		r := httptest.NewRequest(http.MethodPost, "/hook", nil)
		r.Body, r.ContentLength = body, -1
		if h[0] != "" {
			r.Header.Set(h[0], h[1])
		}
		w := httptest.NewRecorder()
		c.serveHook(w, r)
		if w.Code != http.StatusUnauthorized || body.read != 0 {
			t.Errorf("%s: status %d after reading %d bytes; want 401 and nothing read", h[0], w.Code, body.read)
		}
	}
	body := &hookBody{n: 26 << 20}
	r := httptest.NewRequest(http.MethodPost, "/hook", nil)
	r.Body, r.ContentLength = body, -1
	r.Header.Set("X-Hub-Signature-256", "sha256=00")
	w := httptest.NewRecorder()
	c.serveHook(w, r)
	if w.Code != http.StatusRequestEntityTooLarge || body.read > maxHookBody+64<<10 {
		t.Errorf("signed 26 MB: status %d after reading %d bytes; want 413 and at most %d read", w.Code, body.read, maxHookBody)
	}
	// A right token still works, with or without a body.
	r = httptest.NewRequest(http.MethodPost, "/hook", strings.NewReader(`{"ref":"refs/heads/main"}`))
	r.Header.Set("Authorization", "Bearer s3cret")
	c.o.branch = "main"
	w = httptest.NewRecorder()
	c.serveHook(w, r)
	if w.Code != http.StatusAccepted {
		t.Errorf("right token: status %d, want 202: %s", w.Code, w.Body)
	}
}

// TestHookBoundsConcurrentReads: of 20 signed oversized requests at
// once, maxHookReads read their bodies and the others are answered 503
// without reading, so that what is held in memory is bounded.
func TestHookBoundsConcurrentReads(t *testing.T) {
	c := hookCtrl()
	const n = 20
	blocked, release := make(chan struct{}, n), make(chan struct{})
	bodies := make([]*hookBody, n)
	codes := make(chan int, n)
	for i := range bodies {
		bodies[i] = &hookBody{n: 26 << 20, block: 1 << 10, blocked: blocked, release: release}
	}
	// The first maxHookReads block in their reads, holding the slots.
	start := func(b *hookBody) {
		r := httptest.NewRequest(http.MethodPost, "/hook", nil)
		r.Body, r.ContentLength = b, -1
		r.Header.Set("X-Hub-Signature-256", "sha256=00")
		w := httptest.NewRecorder()
		c.serveHook(w, r)
		codes <- w.Code
	}
	for _, b := range bodies[:maxHookReads] {
		go start(b)
	}
	for range maxHookReads {
		select {
		case <-blocked:
		case <-time.After(time.Minute):
			t.Fatal("the first requests never read their bodies")
		}
	}
	for _, b := range bodies[maxHookReads:] {
		go start(b)
		select {
		case code := <-codes:
			if code != http.StatusServiceUnavailable || b.read != 0 {
				t.Fatalf("a request beyond %d at once: status %d after reading %d bytes; want 503, nothing read", maxHookReads, code, b.read)
			}
		case <-blocked:
			close(release)
			t.Fatalf("a request beyond %d at once reads its body", maxHookReads)
		}
	}
	close(release)
	var total int64
	for range maxHookReads {
		if code := <-codes; code != http.StatusRequestEntityTooLarge {
			t.Errorf("status %d, want 413", code)
		}
	}
	for _, b := range bodies {
		total += b.read
	}
	if max := int64(maxHookReads) * (maxHookBody + 64<<10); total > max {
		t.Errorf("read %d bytes in all, want at most %d", total, max)
	}
}

// TestFormerControllerLock: a controller without leader election breaks
// the lock of its own former process (same user@host, pid gone or its
// own) or a stale one of a controller (a SIGKILLed one left it, and its
// restart said "state is locked" for ever); never a laptop's, nor a live
// other process's on its host.
func TestFormerControllerLock(t *testing.T) {
	alive := func(pid int) bool { return pid == 77 }
	info := state.LockInfo{ID: "L", Operation: "controller", Who: "u@h", PID: 55}
	locked := &state.LockedError{Info: info}
	stale := &k8sstate.StaleLockError{Locked: locked, Lease: "ns/l", Renewed: time.Now().Add(-time.Hour), Every: time.Second}
	for _, tc := range []struct {
		name string
		err  error
		info state.LockInfo
		pid  int
		who  string
		want bool
	}{
		{"own host, holder dead", locked, info, 99, "u@h", true},
		{"own host, own pid (a restarted container)", locked, state.LockInfo{ID: "L", Operation: "controller", Who: "u@h", PID: 99}, 99, "u@h", true},
		{"own host, holder alive", locked, state.LockInfo{ID: "L", Operation: "controller", Who: "u@h", PID: 77}, 99, "u@h", false},
		{"other host, renewed", locked, info, 99, "u@other", false},
		{"other host, stale", stale, info, 99, "u@other", true},
		{"a laptop's apply, stale", stale, state.LockInfo{ID: "L", Operation: "apply", Who: "u@h", PID: 55}, 99, "u@h", false},
	} {
		if got := formerControllerLock(tc.err, tc.info, tc.pid, tc.who, alive) != ""; got != tc.want {
			t.Errorf("%s: breaks %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestControllerServerBoundsConnections: the controller's HTTP server (its
// /hook may face the internet) keeps at most 256 connections, closing the
// longest idle ones: 300 clients that each asked /healthz once and stayed
// connected were all kept by the plain http.Server it had (1,500 held
// 1,500 file descriptors with no end), and a new client still gets in.
func TestControllerServerBoundsConnections(t *testing.T) {
	srv := hookCtrl().server()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	defer srv.Close()
	healthz := func(c net.Conn) error {
		if _, err := io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: ctl\r\n\r\n"); err != nil {
			return err
		}
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			return err
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			return fmt.Errorf("status %s", resp.Status)
		}
		return nil
	}
	var conns []net.Conn
	for i := 0; i < 300; i++ {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if err := healthz(c); err != nil {
			t.Fatalf("client %d: %v", i, err)
		}
		conns = append(conns, c)
	}
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := healthz(c); err != nil {
		t.Fatalf("a new client after 300 idle ones: %v", err)
	}
	// The 45 idle longest were closed to make room (the deadline only
	// keeps a server that keeps them from hanging the test).
	for i, c := range conns[:300+1-256] {
		c.SetReadDeadline(time.Now().Add(time.Minute))
		_, err := io.Copy(io.Discard, c)
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			t.Fatalf("idle connection %d of 300 is still open: the server's connections are not bounded", i)
		}
	}
}
