package ui

import (
	"net"
	"net/http"
	"sync"
	"time"
)

// Limits bound what clients can hold of the dashboard's server, with or
// without a token: the number of open connections and how long one may
// take to send a request or sit idle between requests.
type Limits struct {
	// MaxConns is how many connections are open at once (default 256).
	// Past it, a new connection closes the one that has waited longest
	// without a request in progress (new or idle); only when every one
	// is busy is the new one closed instead.
	MaxConns int
	// ReadHeaderTimeout (default 10s) and ReadTimeout (default 30s) bound
	// reading a request; IdleTimeout (default 15s) how long a keep-alive
	// connection waits for its next request. Event streams are not cut:
	// they clear the read deadline once their request is read.
	ReadHeaderTimeout, ReadTimeout, IdleTimeout time.Duration
	// MaxHeaderBytes bounds a request's line and headers (default 64 KiB).
	MaxHeaderBytes int
}

func (l Limits) withDefaults() Limits {
	if l.MaxConns <= 0 {
		l.MaxConns = 256
	}
	if l.ReadHeaderTimeout <= 0 {
		l.ReadHeaderTimeout = 10 * time.Second
	}
	if l.ReadTimeout <= 0 {
		l.ReadTimeout = 30 * time.Second
	}
	if l.IdleTimeout <= 0 {
		l.IdleTimeout = 15 * time.Second
	}
	if l.MaxHeaderBytes <= 0 {
		l.MaxHeaderBytes = 64 << 10
	}
	return l
}

// HTTPServer returns the http.Server that serves h within l.
//
// The connection cap closes connections instead of blocking Accept (as
// golang.org/x/net/netutil.LimitListener does): a blocked Accept would
// let anyone who can reach the port hold every slot with connections
// that never send a request, and lock out the holder of the token.
func HTTPServer(h http.Handler, l Limits) *http.Server {
	hs, _ := httpServer(h, l)
	return hs
}

func httpServer(h http.Handler, l Limits) (*http.Server, *connLimiter) {
	l = l.withDefaults()
	cl := newConnLimiter(l.MaxConns)
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: l.ReadHeaderTimeout,
		ReadTimeout:       l.ReadTimeout,
		IdleTimeout:       l.IdleTimeout,
		MaxHeaderBytes:    l.MaxHeaderBytes,
		ConnState:         cl.track,
		ConnContext:       withConn,
	}, cl
}

// stream readies w for a long response (an event stream): the server's
// read deadline would otherwise end it once ReadTimeout has passed.
func stream(w http.ResponseWriter) {
	http.NewResponseController(w).SetReadDeadline(time.Time{})
}

// connLimiter keeps the connections of a server and closes the longest
// waiting one that has no request in progress when there are too many.
type connLimiter struct {
	max   int
	mu    sync.Mutex
	tick  uint64
	conns map[net.Conn]*connEntry
}

type connEntry struct {
	state http.ConnState
	since uint64 // tick of its last state change
}

func newConnLimiter(max int) *connLimiter {
	return &connLimiter{max: max, conns: map[net.Conn]*connEntry{}}
}

// open returns how many connections are open.
func (l *connLimiter) open() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.conns)
}

func (l *connLimiter) track(c net.Conn, s http.ConnState) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if s == http.StateClosed || s == http.StateHijacked {
		delete(l.conns, c)
		return
	}
	l.tick++
	e := l.conns[c]
	if e == nil {
		e = &connEntry{}
		l.conns[c] = e
	}
	e.state, e.since = s, l.tick
	if s != http.StateNew || len(l.conns) <= l.max {
		return
	}
	victim := c
	oldest := e.since
	for vc, ve := range l.conns {
		if ve.state != http.StateActive && ve.since < oldest {
			victim, oldest = vc, ve.since
		}
	}
	delete(l.conns, victim)
	victim.Close()
}
