package remote

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/trialform/trialform/providers"
	"github.com/trialform/trialform/providers/conformance"
	"github.com/trialform/trialform/providers/remote/sshtest"
)

var (
	labOnce sync.Once
	lab     *sshtest.Lab
	labErr  error
)

// testLab starts two sshd servers on 127.0.0.1 for the package's tests
// (stopped by TestMain).
func testLab(t testing.TB) *sshtest.Lab {
	t.Helper()
	if why := sshtest.Available(); why != "" {
		t.Skip("real SSH tests need sshd: " + why)
	}
	labOnce.Do(func() {
		dir, err := os.MkdirTemp("", "trialform-sshlab-")
		if err != nil {
			labErr = err
			return
		}
		lab, labErr = sshtest.NewLab(dir, 2)
	})
	if labErr != nil {
		t.Fatalf("start sshd: %v", labErr)
	}
	return lab
}

func TestMain(m *testing.M) {
	code := m.Run()
	if lab != nil {
		lab.Close()
		os.RemoveAll(lab.Dir)
	}
	os.Exit(code)
}

func labConfig(t testing.TB, l *sshtest.Lab) Config {
	// The machines share this file system: each gets its own work dir.
	dir := t.TempDir()
	cfg := Config{Name: "lab", KnownHosts: l.KnownHosts, StopGrace: 2 * time.Second}
	for _, s := range l.Servers {
		cfg.Machines = append(cfg.Machines, Machine{Host: s.Host, Port: s.Port, User: l.User, KeyFile: l.KeyFile, MaxTrials: 8,
			WorkDir: filepath.Join(dir, "work-"+s.Name)})
	}
	return cfg
}

func newRemote(t testing.TB, cfg Config) *Remote {
	t.Helper()
	r, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// loseTrial kills the supervisor and the trial's group, as a reboot would
// (the machines are this one).
func loseTrial(t *testing.T, h providers.Handle) {
	for _, k := range []string{"supervisor_pid"} {
		if pid, err := strconv.Atoi(h[k]); err == nil && pid > 0 {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	if pg, err := strconv.Atoi(h["pgid"]); err == nil && pg > 0 {
		_ = syscall.Kill(-pg, syscall.SIGKILL)
	}
}

func TestConformance(t *testing.T) {
	l := testLab(t)
	conformance.Run(t, func(t *testing.T) providers.Provider { return newRemote(t, labConfig(t, l)) }, conformance.Options{
		Lose:       loseTrial,
		Parallel:   true,
		CodeCopied: true,
	})
}

func TestUnknownHostKeyRefused(t *testing.T) {
	l := testLab(t)
	cfg := labConfig(t, l)
	kh := filepath.Join(t.TempDir(), "known_hosts")
	// Only the second server is known.
	if err := os.WriteFile(kh, []byte(sshtest.KnownHostsLine(l.Servers[1].Host, l.Servers[1].Port, l.Servers[1].HostKey)), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg.KnownHosts = kh
	r := newRemote(t, cfg)
	err := r.Validate(context.Background())
	if err == nil {
		t.Fatal("Validate with an unknown host key: want an error")
	}
	want := "ssh-keyscan -p " + strconv.Itoa(l.Servers[0].Port) + " 127.0.0.1 >> " + kh
	if !strings.Contains(err.Error(), want) || !providers.IsPermanent(err) {
		t.Errorf("error %q (permanent %v) does not say %q", err, providers.IsPermanent(err), want)
	}
	// A wrong key is refused too, as a mismatch.
	other := l.Servers[1].HostKey
	if err := os.WriteFile(kh, []byte(sshtest.KnownHostsLine(l.Servers[0].Host, l.Servers[0].Port, other)), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg.Machines = cfg.Machines[:1]
	r2 := newRemote(t, cfg)
	if err := r2.Validate(context.Background()); err == nil || !strings.Contains(err.Error(), "HOST KEY MISMATCH") {
		t.Errorf("mismatching host key: %v", err)
	}
}
