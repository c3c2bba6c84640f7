package remote

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trialform/trialform/providers"
)

// A work_dir the machine cannot write is reported as such (naming
// work_dir and the machine), not as an unreachable machine.
func TestUnwritableWorkDirSaysSo(t *testing.T) {
	l := testLab(t)
	cfg := labConfig(t, l)
	cfg.Machines = cfg.Machines[:1]
	// A file where work_dir's parent should be: no user, root included,
	// can create it.
	file := filepath.Join(t.TempDir(), "a-file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	cfg.Machines[0].WorkDir = filepath.Join(file, "work")
	r := newRemote(t, cfg)
	_, err := r.Start(ctx(t), trialReq("ro", "t1", "true", t.TempDir()))
	if err == nil {
		t.Fatal("Start with an unwritable work_dir: no error")
	}
	addr := l.Servers[0].Addr()
	for _, want := range []string{"work_dir " + filepath.Join(file, "work"), addr, "Not a directory"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "unreachable") {
		t.Errorf("error %q calls the machine unreachable", err)
	}
	if !errors.Is(err, providers.ErrNoCapacity) {
		t.Errorf("error %q: the trial should wait for the machine to be fixed", err)
	}
}

// run.sh says which attempt of which trial it is.
func TestRunScriptHeader(t *testing.T) {
	l := testLab(t)
	cfg := labConfig(t, l)
	cfg.Machines = cfg.Machines[:1]
	r := newRemote(t, cfg)
	h, err := r.Start(ctx(t), trialReq("hdr", "t1", "true", t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(h["dir"], "run.sh"))
	if err != nil || !strings.Contains(string(b), "\n# written by trialform for attempt 1 of trial t1\n") {
		t.Errorf("run.sh: %q %v", b, err)
	}
}
