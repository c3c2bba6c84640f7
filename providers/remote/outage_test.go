package remote

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/trialform/trialform/providers"
)

// savedOutages is what unreadable.json in state holds (none when there
// is no file).
func savedOutages(t *testing.T, state string) map[string]unreadInfo {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(state, "unreadable.json"))
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]unreadInfo
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("unreadable.json: %v: %s", err, b)
	}
	return m
}

// A purge forgets the saved outages of the purged experiment's trials
// (unreadable.json), not those of another experiment's: a trial of the
// same id in the experiment created again must not inherit an outage
// that began before it existed.
func TestPurgeForgetsTrialOutages(t *testing.T) {
	state := t.TempDir()
	r, key, _, hangNew := hungLab(t, func(c *Config) { c.LostGrace = time.Hour; c.StateDir = state })
	defer func(d time.Duration) { sftpTimeout = d }(sftpTimeout)
	sftpTimeout = time.Second
	if _, err := r.Start(ctx(t), trialReq("keep", "t1", "echo hello", t.TempDir())); err != nil {
		t.Fatal(err)
	}
	handles := map[string]providers.Handle{
		"hang": waitPhase(t, r, "hang", "t1", providers.PhaseSucceeded).Handle,
		"keep": waitPhase(t, r, "keep", "t1", providers.PhaseSucceeded).Handle,
	}
	// hang/t1 and keep/t1: both status files hang.
	hangNew("/t1/" + statusFile)
	r.machines[0].close()
	for _, exp := range []string{"hang", "keep"} {
		deadline := time.Now().Add(time.Minute)
		for savedOutages(t, state)[key+" "+exp+"/t1"].Since.IsZero() {
			if time.Now().After(deadline) {
				t.Fatalf("no outage of %s/t1 saved in a minute of reads: %v", exp, savedOutages(t, state))
			}
			err := returns(t, "Read", func() error {
				_, err := r.Read(context.Background(), providers.ReadRequest{Experiment: exp, TrialID: "t1", Handle: handles[exp]})
				return err
			})
			t.Logf("read %s/t1: %v", exp, err)
			r.Warnings() // the end of a refresh
			time.Sleep(100 * time.Millisecond)
		}
	}
	hangNew("no such path") // the sftp-servers answer again
	r.Close()
	rc := newRemote(t, r.cfg) // destroy, in the next command
	if err := rc.PurgeExperiment(ctx(t), "hang", "lin"); err != nil {
		t.Fatal(err)
	}
	saved := savedOutages(t, state)
	if _, ok := saved[key+" hang/t1"]; ok {
		t.Errorf("unreadable.json after the purge of hang: %v, want no outage of hang/t1", saved)
	}
	if _, ok := saved[key+" keep/t1"]; !ok {
		t.Errorf("unreadable.json after the purge of hang: %v, want keep/t1's outage kept", saved)
	}
}
