package local

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/trialform/trialform/providers"
)

// A copy of a working copy (cp -a) holds copies of its trial dirs, whose
// status logs name the original's live processes. The copy's platform
// must not take them for its own trials: read as running, they were
// adopted by `import -all` in the copy, and the copy's destroy then killed
// the original's trials. In the copy such a trial is lost (it does not run
// there), its Stop touches nothing, and the original runs on.
func TestCopiedTrialDirIsNotRunningInTheCopy(t *testing.T) {
	ctx := context.Background()
	l := newLocal(t, nil)
	if _, err := l.Start(ctx, req(l, "exp", "t1", "sleep 1000")); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(eventWait)
	o, err := l.Read(ctx, providers.ReadRequest{Experiment: "exp", TrialID: "t1"})
	for err == nil && o.Phase != providers.PhaseRunning && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
		o, err = l.Read(ctx, providers.ReadRequest{Experiment: "exp", TrialID: "t1"})
	}
	if err != nil || o.Phase != providers.PhaseRunning {
		t.Fatalf("original: %+v, %v", o, err)
	}
	c := newLocal(t, nil)
	if out, err := exec.Command("cp", "-a", filepath.Join(l.cfg.Root, "exp"), c.cfg.Root).CombinedOutput(); err != nil {
		t.Fatalf("cp -a: %v\n%s", err, out)
	}
	orig := filepath.Join(l.cfg.Root, "exp", "t1")
	co, err := c.Read(ctx, providers.ReadRequest{Experiment: "exp", TrialID: "t1"})
	if err != nil || co.Phase != providers.PhaseLost || !strings.Contains(co.Reason, "a copy of "+orig) {
		t.Errorf("the copy's trial read: %+v, %v; want LOST, a copy of %s", co, err, orig)
	}
	imp, err := c.Import(ctx, providers.ImportRequest{Experiment: "exp", TrialID: "t1", Lineage: "copy"})
	if err != nil || imp.Observation.Phase != providers.PhaseLost {
		t.Errorf("the copy's trial imported: %+v, %v; want LOST", imp.Observation, err)
	}
	if err := c.Stop(ctx, providers.StopRequest{Experiment: "exp", TrialID: "t1", Grace: time.Second}); err != nil {
		t.Fatal(err)
	}
	if o, err := l.Read(ctx, providers.ReadRequest{Experiment: "exp", TrialID: "t1"}); err != nil || o.Phase != providers.PhaseRunning {
		t.Errorf("the original after the copy's Stop: %+v, %v; want RUNNING", o, err)
	}
	// The original's own dir, named through a symbolic link, is no copy.
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(l.cfg.Root, link); err != nil {
		t.Fatal(err)
	}
	lc := l.cfg
	lc.Root = link
	viaLink, err := New(lc)
	if err != nil {
		t.Fatal(err)
	}
	if o, err := viaLink.Read(ctx, providers.ReadRequest{Experiment: "exp", TrialID: "t1"}); err != nil || o.Phase != providers.PhaseRunning {
		t.Errorf("the original through a link: %+v, %v; want RUNNING", o, err)
	}
}
