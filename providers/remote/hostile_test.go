package remote

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/trialform/trialform/providers"
	"github.com/trialform/trialform/providers/remote/sshtest"
)

// A compromised machine (or an altered scan.sh in its work_dir) that
// prints without end does not fill this machine's memory: a remote
// command's output is read up to maxShellOutput, then the command is
// given up, and the machine is left out of the placement, saying why.
func TestHugeRemoteOutputRefused(t *testing.T) {
	l := testLab(t)
	cfg := labConfig(t, l)
	cfg.Machines = cfg.Machines[:1]
	r := newRemote(t, cfg)
	m := r.machines[0]
	if _, _, err := m.connected(ctx(t)); err != nil {
		t.Fatal(err)
	}
	if err := r.upload(ctx(t), m, r.lib, r.libDir(m)); err != nil {
		t.Fatal(err)
	}
	// The machine is this one: alter its scan.sh to print 4 MiB more
	// than the limit, in one line.
	scan := filepath.Join(r.libDir(m), "scan.sh")
	huge := "head -c " + strconv.Itoa(maxShellOutput+4<<20) + " /dev/zero | tr '\\0' x\n"
	if err := os.Chmod(r.libDir(m), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(scan, []byte(huge), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := r.Start(ctx(t), trialReq("huge", "t1", "true", t.TempDir()))
	if err == nil || !errors.Is(err, providers.ErrNoCapacity) {
		t.Fatalf("start on a machine whose scan.sh prints %d bytes: %v, want a wait saying why", maxShellOutput+4<<20, err)
	}
	t.Log(err)
	for _, w := range []string{m.key, "printed more than 16 MiB"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not say %q", err, w)
		}
	}
}

// A machine whose trial dir claims an enormous stdout.kept (the output
// cap's record, here a sparse 8 TiB file and a stdout.cut saying it is
// all kept) costs a bounded read, not an allocation of its size, which
// killed the whole process (CLI, controller) with "out of memory".
func TestEnormousKeptFileBounded(t *testing.T) {
	l := testLab(t)
	cfg := labConfig(t, l)
	cfg.Machines = cfg.Machines[:1]
	r := newRemote(t, cfg)
	h, err := r.Start(ctx(t), trialReq("kept", "t1", "echo 'trialform: 1'", t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	waitPhase(t, r, "kept", "t1", providers.PhaseSucceeded)
	dir := r.machines[0].trialDir("kept", "t1")
	const huge = 8 << 40
	if err := os.WriteFile(filepath.Join(dir, keptFile), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(filepath.Join(dir, keptFile), huge); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, stdoutFile+cutSuffix), []byte("0 1 33554432 "+strconv.Itoa(huge)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Read(ctx(t), providers.ReadRequest{Experiment: "kept", TrialID: "t1", Handle: h}); err != nil {
		t.Logf("read: %v", err) // an error is fine; dying is not
	}
}

// A machine whose SSH login works but whose SFTP subsystem never answers
// (a hung sftp-server, a home directory on a stalled network file
// system) is a failed dial that names it, not a dial that holds the
// machine, and every call that needs it (Validate, a refresh), for ever.
func TestHungSFTPSubsystemIsAFailedDial(t *testing.T) {
	testLab(t) // sshd is there
	// Every session, the SFTP subsystem included, runs this instead.
	dir := t.TempDir()
	l, err := sshtest.NewLabConfig(filepath.Join(dir, "lab"), 1, "ForceCommand /bin/sleep 600")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	r := newRemote(t, labConfig(t, l))
	done := make(chan error, 1)
	go func() { done <- r.Validate(context.Background()) }()
	select {
	case err := <-done:
		key := l.Servers[0].Addr()
		_, _, cerr := r.machines[0].connected(ctx(t))
		if cerr == nil || !strings.Contains(cerr.Error(), key) || !strings.Contains(cerr.Error(), "SFTP") {
			t.Fatalf("validate: %v; then connected: %v, want a failed dial naming %s and SFTP", err, cerr, key)
		}
		t.Log(cerr)
	case <-time.After(eventWait):
		t.Fatalf("Validate of a machine whose SFTP subsystem never answers still runs after %s", eventWait)
	}
}

// A command session (an upload's) reads what the command prints up to
// maxShellOutput too: a machine printing more is an error saying so,
// not this machine's memory filled.
func TestHugeRunOutputRefused(t *testing.T) {
	l := testLab(t)
	cfg := labConfig(t, l)
	cfg.Machines = cfg.Machines[:1]
	r := newRemote(t, cfg)
	m := r.machines[0]
	for _, cmd := range []string{"head -c 20000000 /dev/zero", "head -c 20000000 /dev/zero >&2; exit 1", "cat /dev/zero"} {
		out, err := m.run(ctx(t), cmd, nil)
		if err == nil || !strings.Contains(err.Error(), "more than 16 MiB") || len(out) > maxShellOutput {
			t.Fatalf("%s: %d bytes, %v; want an error saying it printed more than 16 MiB", cmd, len(out), err)
		}
		t.Logf("%s: %v", cmd, err)
	}
	// The connection is still good.
	if out, err := m.run(ctx(t), "echo ok", nil); err != nil || string(out) != "ok\n" {
		t.Fatalf("echo ok after: %q %v", out, err)
	}
}
