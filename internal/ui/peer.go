package ui

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
)

// A dashboard served without a token (on 127.0.0.1) is reachable by every
// user of the machine: on a shared machine another user would read, through
// it, the trials' output that their 0600 files keep from them, and make it
// connect to the platforms with its owner's credentials (plan, logs). With
// Options.SameUser it serves only connections made by processes of the
// user it runs as: the kernel's socket table (/proc/net/tcp) names the
// owner of the connecting socket.

// connKey is the context key of a request's *connPeer.
type connKey struct{}

// connPeer finds, once per connection, the uid owning its other end.
type connPeer struct {
	once sync.Once
	c    net.Conn
	uid  int
	err  error
}

func (p *connPeer) get() (int, error) {
	p.once.Do(func() { p.uid, p.err = peerUID(p.c.LocalAddr(), p.c.RemoteAddr()) })
	return p.uid, p.err
}

// withConn is the servers' ConnContext: it keeps the connection for
// checkUser (looked up at its first request that needs it).
func withConn(ctx context.Context, c net.Conn) context.Context {
	return context.WithValue(ctx, connKey{}, &connPeer{c: c})
}

// checkUser says why r may not be served when SameUser is set: its
// connection was made by another user's process, or its user is unknown.
func (s *Server) checkUser(r *http.Request) error {
	p, _ := r.Context().Value(connKey{}).(*connPeer)
	if p == nil {
		return errors.New("the connection's user is unknown (a server without ui.HTTPServer's ConnContext)")
	}
	uid, err := p.get()
	if err != nil {
		return fmt.Errorf("cannot tell which user connected (%v)", err)
	}
	if uid != s.uid {
		return fmt.Errorf("connected by uid %d, but this dashboard serves only its own user (uid %d)", uid, s.uid)
	}
	return nil
}

// peerUID returns the uid owning the socket at the other end of a TCP
// connection on this machine (local and remote as this end sees them).
func peerUID(local, remote net.Addr) (int, error) {
	l, ok1 := local.(*net.TCPAddr)
	r, ok2 := remote.(*net.TCPAddr)
	if !ok1 || !ok2 {
		return -1, fmt.Errorf("not a TCP connection: %v", remote)
	}
	var lastErr error
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		b, err := os.ReadFile(table)
		if err != nil {
			lastErr = err
			continue
		}
		// The other end's socket: its local address is this end's remote.
		if uid, ok := socketUID(b, procAddr(r), procAddr(l)); ok {
			return uid, nil
		}
	}
	if lastErr != nil {
		return -1, lastErr
	}
	return -1, fmt.Errorf("no socket of this machine connects from %v", remote)
}

// socketUID finds, in a /proc/net/tcp table, the socket whose local and
// remote addresses are local and remote (procAddr's form) and returns its
// uid.
func socketUID(table []byte, local, remote string) (int, bool) {
	sc := bufio.NewScanner(bytes.NewReader(table))
	sc.Scan() // the header
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 8 || !strings.EqualFold(f[1], local) || !strings.EqualFold(f[2], remote) {
			continue
		}
		uid, err := strconv.Atoi(f[7])
		return uid, err == nil
	}
	return -1, false
}

// procAddr writes a TCP address as /proc/net/tcp does: the address's
// 32-bit words in the machine's byte order, in hex, then the port.
func procAddr(a *net.TCPAddr) string {
	ip := a.IP.To16()
	if ip4 := a.IP.To4(); ip4 != nil {
		ip = ip4
	}
	var sb strings.Builder
	for i := 0; i+4 <= len(ip); i += 4 {
		fmt.Fprintf(&sb, "%08X", binary.NativeEndian.Uint32(ip[i:i+4]))
	}
	fmt.Fprintf(&sb, ":%04X", a.Port)
	return sb.String()
}
