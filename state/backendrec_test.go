package state

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestBackendRecord(t *testing.T) {
	dir := t.TempDir()
	if r, err := RecordedBackend(dir); err != nil || r != nil {
		t.Fatalf("no record: %+v, %v", r, err)
	}
	want := BackendRecord{Kind: "pg", Settings: map[string]any{"host": "db", "port": 5432}}
	if err := RecordBackend(dir, want); err != nil {
		t.Fatal(err)
	}
	got, err := RecordedBackend(dir)
	if err != nil || got == nil {
		t.Fatalf("read back: %+v, %v", got, err)
	}
	// Read back from JSON (the port a float64), it is the same backend.
	if !got.Same(want) || !want.Same(*got) {
		t.Errorf("%+v is not the same as %+v", got, want)
	}
	moved := BackendRecord{Kind: "pg", Settings: map[string]any{"host": "db2", "port": 5432, "schema_name": "x"}}
	if got.Same(moved) {
		t.Error("a changed host is the same backend")
	}
	if c := got.ChangedSettings(moved); !reflect.DeepEqual(c, []string{"host", "schema_name"}) {
		t.Errorf("changed settings %v", c)
	}
	// Back to local without settings: the record goes, as if never made.
	if err := RecordBackend(dir, BackendRecord{Kind: LocalBackend}); err != nil {
		t.Fatal(err)
	}
	if r, err := RecordedBackend(dir); err != nil || r != nil {
		t.Fatalf("after local: %+v, %v", r, err)
	}
	// A damaged record says how to write it again.
	if err := os.WriteFile(filepath.Join(dir, backendRecordName), []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := RecordedBackend(dir); err == nil || !strings.Contains(err.Error(), "trialform init -reconfigure") {
		t.Fatalf("damaged record: %v", err)
	}
}

// The lock error names the backend and the experiments held, where the
// lock is a shared backend's; a local lock reads as it always did.
func TestLockedErrorNamesBackendAndExperiments(t *testing.T) {
	info := LockInfo{ID: "abc", Operation: "apply", Who: "alice@gpu1", PID: 42}
	local := (&LockedError{Info: info}).Error()
	if !strings.HasPrefix(local, "state is locked by apply (pid 42, alice@gpu1,") {
		t.Errorf("local: %s", local)
	}
	info.Backend, info.Path, info.Experiments = "pg", "db.example/trialform", []string{"a", "b"}
	shared := (&LockedError{Info: info}).Error()
	if !strings.HasPrefix(shared, "experiments a, b of the state in the pg backend (db.example/trialform) are locked by apply (pid 42, alice@gpu1,") ||
		!strings.Contains(shared, "trialform force-unlock abc") {
		t.Errorf("shared: %s", shared)
	}
}
