package remote

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trialform/trialform/providers"
	"github.com/trialform/trialform/providers/remote/sshtest"
)

// hostile is a TCP server on 127.0.0.1 that handles each connection with
// serve (nil: accept and stay silent until the test ends).
func hostile(t *testing.T, serve func(net.Conn)) (host string, port int) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var held []net.Conn
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range held {
			c.Close()
		}
	})
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			if serve == nil {
				mu.Lock()
				held = append(held, c)
				mu.Unlock()
				continue
			}
			go serve(c)
		}
	}()
	a := ln.Addr().(*net.TCPAddr)
	return "127.0.0.1", a.Port
}

// freeClosedPort is a port on 127.0.0.1 where nothing listens.
func freeClosedPort(t *testing.T) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	return p
}

// A machine that cannot be reached, or that answers but not with SSH, is
// said so in plain words that name it and what to check, and a new trial
// waits for it (ErrNoCapacity) without "no free capacity" or the raw
// network error appended ("ssh: handshake failed: EOF: no free capacity").
func TestUnreachableMachineSaysWhat(t *testing.T) {
	l := testLab(t)
	base := labConfig(t, l).Machines[0]
	silentHost, silentPort := hostile(t, nil)
	closeHost, closePort := hostile(t, func(c net.Conn) { c.Close() })
	httpHost, httpPort := hostile(t, func(c net.Conn) {
		io.WriteString(c, "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")
		c.Close()
	})
	for _, tc := range []struct {
		name string
		host string
		port int
		want []string
		not  []string
	}{
		{"silent", silentHost, silentPort, []string{"sent no SSH greeting", "listens on port " + strconv.Itoa(silentPort)}, []string{"i/o timeout"}},
		{"closes", closeHost, closePort, []string{"closed the connection before any SSH greeting"}, []string{"EOF", "reset by peer"}},
		{"http", httpHost, httpPort, []string{"is not an SSH server", `"HTTP/1.1 400 Bad Request"`}, []string{"EOF"}},
		{"refused", "127.0.0.1", freeClosedPort(t), []string{"connection refused (nothing listens on port", "check that sshd runs"}, []string{"dial tcp"}},
		{"dns", "no-such-host.invalid", 22, []string{"no-such-host.invalid"}, []string{"dial tcp"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := base
			m.Host, m.Port = tc.host, tc.port
			cfg := Config{Name: "lab", KnownHosts: l.KnownHosts, Machines: []Machine{m}}
			r := newRemote(t, cfg)
			// The silent server is waited for as long as ctx allows (10 s
			// at most): a shorter deadline keeps the test short.
			c, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			defer cancel()
			_, err := r.Start(c, trialReq("reach", "t1", "true", t.TempDir()))
			if err == nil || !errors.Is(err, providers.ErrNoCapacity) || providers.IsPermanent(err) {
				t.Fatalf("start on the %s machine: %v, want a wait for it", tc.name, err)
			}
			msg := err.Error()
			want := append([]string{"machine " + net.JoinHostPort(tc.host, strconv.Itoa(tc.port)) + " "}, tc.want...)
			if tc.name == "dns" && !strings.Contains(msg, "does not resolve") && !strings.Contains(msg, "could not be looked up") {
				t.Errorf("error %q does not say the host name does not resolve", msg)
			}
			for _, w := range want {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q does not say %q", msg, w)
				}
			}
			for _, n := range append(tc.not, "no free capacity") {
				if strings.Contains(msg, n) {
					t.Errorf("error %q says %q", msg, n)
				}
			}
		})
	}
}

// An SSH server slow to greet (3 s, under the 10 s limit, leaving a loaded machine 7 s for sshd itself) is still logged
// in to.
func TestSlowGreetingMachine(t *testing.T) {
	l := testLab(t)
	cfg := labConfig(t, l)
	real := l.Servers[0].Addr()
	host, port := hostile(t, func(c net.Conn) {
		defer c.Close()
		s, err := net.Dial("tcp", real)
		if err != nil {
			return
		}
		defer s.Close()
		go io.Copy(s, c)
		time.Sleep(3 * time.Second)
		io.Copy(c, s)
	})
	// The proxy is the same machine: its host key is the real one's.
	cfg.KnownHosts = knownHostsFor(t, host, port, l.Servers[0])
	cfg.Machines = cfg.Machines[:1]
	cfg.Machines[0].Host, cfg.Machines[0].Port = host, port
	r := newRemote(t, cfg)
	if err := r.Validate(ctx(t)); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Start(ctx(t), trialReq("slow", "t1", "true", t.TempDir())); err != nil {
		t.Fatalf("start on a machine that greets after 3s: %v", err)
	}
	waitPhase(t, r, "slow", "t1", providers.PhaseSucceeded)
}

// knownHostsFor writes a known_hosts file that gives host:port the key
// of srv.
func knownHostsFor(t *testing.T, host string, port int, srv *sshtest.Server) string {
	p := filepath.Join(t.TempDir(), "known_hosts")
	if err := os.WriteFile(p, []byte(sshtest.KnownHostsLine(host, port, srv.HostKey)), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// A List that cannot reach a machine says so (the trials there that the
// state does not know cannot be found), naming the machine and what
// happened, instead of listing as if it held none.
func TestListSaysWhatItCouldNotList(t *testing.T) {
	l := testLab(t)
	cfg := labConfig(t, l)
	down := net.JoinHostPort("127.0.0.1", strconv.Itoa(freeClosedPort(t)))
	_, port, _ := net.SplitHostPort(down)
	cfg.Machines[1].Port, _ = strconv.Atoi(port)
	r := newRemote(t, cfg)
	if _, err := r.List(ctx(t), "reach"); err != nil {
		t.Fatal(err)
	}
	w := lines(r.Warnings())
	if !strings.Contains(w, "machine "+down+" unreachable: connection refused") || !strings.Contains(w, "experiment reach on it were not listed: their state is unknown") {
		t.Errorf("warnings %q do not say that %s was not listed and why", w, down)
	}
}

// The reads of the trials of a machine that went away say the same
// words, so that a refresh tells it once for them all.
func TestUnreachableReadsSayTheSame(t *testing.T) {
	l := testLab(t)
	cfg := labConfig(t, l)
	srv := l.Servers[1]
	cfg.Machines = cfg.Machines[1:]
	r := newRemote(t, cfg)
	code := t.TempDir()
	var hs []providers.Handle
	for _, id := range []string{"t1", "t2"} {
		h, err := r.Start(ctx(t), trialReq("same", id, "true", code))
		if err != nil {
			t.Fatal(err)
		}
		waitPhase(t, r, "same", id, providers.PhaseSucceeded)
		hs = append(hs, h)
	}
	srv.Stop()
	defer srv.Start()
	// A new provider, as the next CLI command is: it dials once.
	r2 := newRemote(t, cfg)
	var msgs []string
	for i, id := range []string{"t1", "t2"} {
		_, err := r2.Read(ctx(t), providers.ReadRequest{Experiment: "same", TrialID: id, Handle: hs[i]})
		if err == nil {
			t.Fatalf("read %s on a stopped machine: no error", id)
		}
		msgs = append(msgs, err.Error())
	}
	if msgs[0] != msgs[1] {
		t.Errorf("reads of one unreachable machine differ:\n%s\n%s", msgs[0], msgs[1])
	}
	if n := strings.Count(msgs[0], "unreachable"); n != 1 {
		t.Errorf("%q says unreachable %d times, want once", msgs[0], n)
	}
}
