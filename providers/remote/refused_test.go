package remote

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/trialform/trialform/providers"
	"github.com/trialform/trialform/providers/remote/sshtest"
)

// strangerKey writes a private key no machine authorizes.
func strangerKey(t *testing.T) string {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	block, err := ssh.MarshalPrivateKey(priv, "stranger")
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "id_stranger")
	if err := os.WriteFile(p, pem.EncodeToMemory(block), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func lines(ws []string) string { return strings.Join(ws, "\n") }

// A machine that refuses the login (here: mid-run, as a restarted sshd
// with an emptied authorized_keys would) is treated as an unreachable one:
// a warning names it, the other machines take the new trials, and its
// trials turn LOST after lost_grace saying why. Only when every machine
// refuses is the platform refused.
func TestRefusedLoginMachine(t *testing.T) {
	l := testLab(t)
	cfg := labConfig(t, l)
	a, b := l.Servers[0].Addr(), l.Servers[1].Addr()
	one := cfg
	one.Machines = cfg.Machines[:1]
	r1 := newRemote(t, one)
	code := t.TempDir()
	h, err := r1.Start(ctx(t), trialReq("ref", "t1", "sleep 300", code))
	if err != nil {
		t.Fatal(err)
	}
	defer r1.Stop(ctx(t), providers.StopRequest{Experiment: "ref", TrialID: "t1", Grace: time.Second})
	waitPhase(t, r1, "ref", "t1", providers.PhaseRunning)

	bad := cfg
	bad.Machines = append([]Machine(nil), cfg.Machines...)
	bad.Machines[0].KeyFile = strangerKey(t)
	bad.LostGrace = time.Millisecond
	bad.StateDir = t.TempDir()
	r2 := newRemote(t, bad)
	if err := r2.Validate(ctx(t)); err != nil {
		t.Fatalf("Validate with one machine of two refusing the login: %v", err)
	}
	if w := lines(r2.Warnings()); !strings.Contains(w, a) || !strings.Contains(w, `login as "`+l.User+`" refused`) {
		t.Errorf("warnings %q do not name the refusing machine", w)
	}
	rr := providers.ReadRequest{Experiment: "ref", TrialID: "t1", Handle: h}
	deadline := time.Now().Add(eventWait)
	for {
		o, err := r2.Read(ctx(t), rr)
		if err == nil && o.Phase == providers.PhaseLost {
			if !strings.Contains(o.Reason, "refusing trialform") || !strings.Contains(o.Reason, "refused") {
				t.Errorf("LOST reason %q does not say the login was refused", o.Reason)
			}
			break
		}
		if err != nil && (!strings.Contains(err.Error(), "refus") || providers.IsPermanent(err)) {
			t.Fatalf("Read of a trial on the refusing machine: %v", err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("never LOST: %+v %v", o, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	resume := trialReq("ref", "t1", "sleep 300", code)
	resume.Resume, resume.Handle = true, h
	if _, err := r2.Start(ctx(t), resume); !errors.Is(err, providers.ErrNoCapacity) {
		t.Errorf("resume on the refusing machine: %v, want a wait", err)
	}
	h2, err := r2.Start(ctx(t), trialReq("ref", "t2", "true", code))
	if err != nil || h2["machine"] != b {
		t.Errorf("new trial: %v %v, want it on %s", h2, err, b)
	}
	if _, err := r2.List(ctx(t), "ref"); err != nil {
		t.Errorf("List with a refusing machine: %v", err)
	}

	only := bad
	only.Machines = bad.Machines[:1]
	if err := newRemote(t, only).Validate(ctx(t)); err == nil || !providers.IsPermanent(err) || !strings.Contains(err.Error(), "refused") {
		t.Errorf("Validate with its only machine refusing the login: %v", err)
	}
}

// A machine whose host key changed is never logged in to, but the others
// are used.
func TestChangedHostKeyMachineLeftOut(t *testing.T) {
	l := testLab(t)
	cfg := labConfig(t, l)
	kh := filepath.Join(t.TempDir(), "known_hosts")
	s0, s1 := l.Servers[0], l.Servers[1]
	if err := os.WriteFile(kh, []byte(sshtest.KnownHostsLine(s0.Host, s0.Port, s1.HostKey)+sshtest.KnownHostsLine(s1.Host, s1.Port, s1.HostKey)), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg.KnownHosts = kh
	r := newRemote(t, cfg)
	if err := r.Validate(ctx(t)); err != nil {
		t.Fatalf("Validate with one machine's host key changed: %v", err)
	}
	if w := lines(r.Warnings()); !strings.Contains(w, s0.Addr()+": HOST KEY MISMATCH") {
		t.Errorf("warnings %q do not name the mismatch", w)
	}
	for _, id := range []string{"t1", "t2", "t3"} {
		h, err := r.Start(ctx(t), trialReq("hk", id, "true", t.TempDir()))
		if err != nil || h["machine"] != s1.Addr() {
			t.Errorf("trial %s: %v %v, want it on %s", id, h, err, s1.Addr())
		}
	}
}
