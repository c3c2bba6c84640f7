package state

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func newManager(t *testing.T) *Manager {
	t.Helper()
	return NewManager(filepath.Join(t.TempDir(), ".trialform"))
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func serialOf(t *testing.T, b []byte) uint64 {
	t.Helper()
	var h struct{ Serial uint64 }
	if err := json.Unmarshal(b, &h); err != nil {
		t.Fatal(err)
	}
	return h.Serial
}

// dirNames lists the manager directory.
func dirNames(t *testing.T, m *Manager) []string {
	t.Helper()
	ents, err := os.ReadDir(m.Dir())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

func TestLoadWithoutFile(t *testing.T) {
	m := newManager(t)
	s, err := m.Load()
	if err != nil {
		t.Fatal(err)
	}
	if s.Version != FormatVersion || s.Serial != 0 || s.Lineage == "" || s.Experiments == nil {
		t.Errorf("Load without file = %+v", s)
	}
	if _, err := os.Stat(m.Dir()); !os.IsNotExist(err) {
		t.Errorf("Load created the state directory (stat: %v)", err)
	}
	if m.Dir() == "" || filepath.Base(m.Dir()) != ".trialform" {
		t.Errorf("Dir() = %q", m.Dir())
	}
}

func TestSaveLoadRoundTrip(t *testing.T) {
	m := newManager(t)
	s := sampleState(20)
	s.Experiments["mnist"].Trials["t00003"].Value = ptr(0.0)
	s.Experiments["mnist"].Trials["t00004"].Final["loss"] = 0
	if err := m.Save(s); err != nil {
		t.Fatal(err)
	}
	if s.Serial != 1 {
		t.Errorf("serial after first save = %d, want 1", s.Serial)
	}
	for _, fresh := range []bool{false, true} {
		mm := m
		if fresh {
			mm = NewManager(m.Dir())
		}
		got, err := mm.Load()
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, s) {
			a, _ := json.MarshalIndent(got, "", " ")
			b, _ := json.MarshalIndent(s, "", " ")
			t.Fatalf("loaded state differs from saved (fresh manager %v):\n%s\nvs\n%s", fresh, a, b)
		}
	}
	if got := dirNames(t, m); !reflect.DeepEqual(got, []string{"state.json"}) {
		t.Errorf("directory after first save = %v", got)
	}
}

func TestSaveByteIdenticalForEqualStates(t *testing.T) {
	// Two states built in different orders (map insertion order, clones)
	// produce identical files.
	a := sampleState(50)
	b := &State{Version: FormatVersion, Lineage: a.Lineage, Experiments: map[string]*Experiment{}}
	names := []string{"cifar", "mnist"}
	for _, n := range names {
		e := *a.Experiments[n]
		e.Trials = map[string]*Trial{}
		ids := sortedKeys(a.Experiments[n].Trials)
		for i := len(ids) - 1; i >= 0; i-- {
			e.Trials[ids[i]] = a.Experiments[n].Trials[ids[i]].Clone()
		}
		b.Experiments[n] = &e
	}
	ma, mb := newManager(t), newManager(t)
	if err := ma.Save(a); err != nil {
		t.Fatal(err)
	}
	if err := mb.Save(b.Clone()); err != nil {
		t.Fatal(err)
	}
	fa, fb := readFile(t, filepath.Join(ma.Dir(), "state.json")), readFile(t, filepath.Join(mb.Dir(), "state.json"))
	if !bytes.Equal(fa, fb) {
		t.Error("equal states gave different files")
	}
	if !bytes.Contains(fa, []byte("\n  \"experiments\": {\n    \"cifar\": {\n")) {
		t.Errorf("file is not indented as expected:\n%.300s", fa)
	}
}

func TestSerialBumpsOnlyOnChangeAndBackupHoldsPrevious(t *testing.T) {
	m := newManager(t)
	m.noJournal = true // the whole-file path (journal_test.go tests the journal)
	path := filepath.Join(m.Dir(), "state.json")
	s, _ := m.Load()
	if err := m.Save(s); err != nil { // first save writes even an empty state
		t.Fatal(err)
	}
	v1 := readFile(t, path)
	if s.Serial != 1 || serialOf(t, v1) != 1 {
		t.Fatalf("serial after first save: state %d, file %d", s.Serial, serialOf(t, v1))
	}
	fi1, _ := os.Stat(path)

	for range 3 { // unchanged: no write, serial kept
		if err := m.Save(s); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.Save(s.Clone()); err != nil {
		t.Fatal(err)
	}
	fi, _ := os.Stat(path)
	if s.Serial != 1 || !os.SameFile(fi, fi1) {
		t.Fatalf("unchanged save wrote the file (serial %d)", s.Serial)
	}
	if _, err := os.Stat(path + ".backup"); !os.IsNotExist(err) {
		t.Errorf("backup exists after only one write: %v", err)
	}

	s.Experiments["mnist"] = sampleState(2).Experiments["mnist"]
	if err := m.Save(s); err != nil {
		t.Fatal(err)
	}
	v2 := readFile(t, path)
	if s.Serial != 2 || serialOf(t, v2) != 2 {
		t.Errorf("serial after change: state %d, file %d", s.Serial, serialOf(t, v2))
	}
	if b := readFile(t, path+".backup"); !bytes.Equal(b, v1) {
		t.Errorf("backup is not the previous version:\n%s", b)
	}

	s.Experiments["mnist"].Trials["t00001"].Status = Canceled // in place, as apply does
	if err := m.Save(s); err != nil {
		t.Fatal(err)
	}
	v3 := readFile(t, path)
	if s.Serial != 3 || !bytes.Contains(v3, []byte(`"CANCELED"`)) {
		t.Errorf("in-place change not saved (serial %d)", s.Serial)
	}
	if b := readFile(t, path+".backup"); !bytes.Equal(b, v2) {
		t.Error("backup is not the previous version after the second change")
	}
	// A fresh manager sees the same content and compares equal too.
	m2 := NewManager(m.Dir())
	s2, err := m2.Load()
	if err != nil {
		t.Fatal(err)
	}
	if err := m2.Save(s2); err != nil || s2.Serial != 3 {
		t.Errorf("fresh manager re-saving unchanged state: err %v, serial %d", err, s2.Serial)
	}
	if got := dirNames(t, m); !reflect.DeepEqual(got, []string{"state.json", "state.json.backup"}) {
		t.Errorf("directory = %v (temporary files left?)", got)
	}
}

func TestSaveManyTimesLeavesNoTempFiles(t *testing.T) {
	m := newManager(t)
	m.noJournal = true // the whole-file path (journal_test.go tests the journal)
	s := sampleState(30)
	for i := range 200 {
		s.Experiments["mnist"].Trials[fmt.Sprintf("t%05d", i%30)].Attempts++
		if err := m.Save(s); err != nil {
			t.Fatal(err)
		}
	}
	if s.Serial != 200 {
		t.Errorf("serial = %d, want 200", s.Serial)
	}
	if got := dirNames(t, m); !reflect.DeepEqual(got, []string{"state.json", "state.json.backup"}) {
		t.Errorf("directory = %v", got)
	}
	got, err := NewManager(m.Dir()).Load()
	if err != nil || !reflect.DeepEqual(got, s) {
		t.Errorf("reloaded state differs (err %v)", err)
	}
	if b := readFile(t, filepath.Join(m.Dir(), "state.json.backup")); serialOf(t, b) != 199 {
		t.Errorf("backup serial = %d, want 199", serialOf(t, b))
	}
	// A fresh manager (a new command) finds the unchanged state unchanged
	// without encoding at Load.
	path := filepath.Join(m.Dir(), "state.json")
	fi, _ := os.Stat(path)
	m2 := NewManager(m.Dir())
	m2.noJournal = true
	s2, err := m2.Load()
	if err != nil {
		t.Fatal(err)
	}
	if err := m2.Save(s2); err != nil || s2.Serial != 200 {
		t.Errorf("unchanged save by a fresh manager: %v, serial %d", err, s2.Serial)
	}
	if fi2, _ := os.Stat(path); !os.SameFile(fi, fi2) {
		t.Error("unchanged save by a fresh manager rewrote the file")
	}
}

func TestHandReformattedFileIsRewritten(t *testing.T) {
	m := newManager(t)
	m.noJournal = true // the whole-file path (journal_test.go tests the journal)
	s := sampleState(3)
	if err := m.Save(s); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(m.Dir(), "state.json")
	var compact bytes.Buffer
	json.Compact(&compact, readFile(t, path))
	os.WriteFile(path, compact.Bytes(), 0o644)
	m2 := NewManager(m.Dir())
	m2.noJournal = true
	s2, err := m2.Load()
	if err != nil || !reflect.DeepEqual(s2, s) {
		t.Fatalf("Load of a compacted file: %v", err)
	}
	if err := m2.Save(s2); err != nil || s2.Serial != 2 {
		t.Fatalf("Save: %v, serial %d", err, s2.Serial)
	}
	if b := readFile(t, path); !bytes.Contains(b, []byte("\n  \"serial\": 2,\n")) {
		t.Errorf("file not rewritten in the canonical layout:\n%.200s", b)
	}
}

func TestLeftoverTempFileIgnoredAndCleaned(t *testing.T) {
	m := newManager(t)
	s := sampleState(2)
	if err := m.Save(s); err != nil {
		t.Fatal(err)
	}
	// A crash between writing the temporary file and renaming it.
	tmp := filepath.Join(m.Dir(), tempPrefix+"123456")
	if err := os.WriteFile(tmp, []byte(`{"version": 1, "serial": 99, "lin`), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := NewManager(m.Dir()).Load()
	if err != nil || got.Serial != 1 {
		t.Fatalf("Load with a leftover temp file: serial %v, err %v", got, err)
	}
	s.Experiments["cifar"].Goal = "maximize"
	if err := m.Save(s); err != nil {
		t.Fatal(err)
	}
	l, err := m.Lock(t.Context(), "apply", "test", 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(tmp); !os.IsNotExist(err) {
		t.Errorf("Lock did not remove the leftover temp file (stat: %v)", err)
	}
	l.Unlock()
}

func TestUnreadableFilesRefusedAndNeverOverwritten(t *testing.T) {
	valid, _ := json.MarshalIndent(sampleState(3), "", "  ")
	for _, tc := range []struct {
		name    string
		content string
		want    []string // in the error message
		newer   bool
	}{
		{"empty", "", []string{"is empty"}, false},
		{"blank", " \n\t\n", []string{"is empty"}, false},
		{"truncated", string(valid[:len(valid)/2]), []string{"is truncated"}, false},
		{"truncated at brace", string(valid[:len(valid)-2]), []string{"is truncated"}, false},
		{"not json", "version = 1\n", []string{"is not valid JSON", "line 1"}, false},
		{"garbage later", "{\n\"version\": 1,\n\"serial\": x}", []string{"is not valid JSON", "line 3"}, false},
		{"array", "[1, 2]", []string{"shape of a state"}, false},
		{"no version", `{"serial": 1, "lineage": "x", "experiments": {}}`, []string{`no "version"`}, false},
		{"no lineage", `{"version": 1, "serial": 1, "experiments": {}}`, []string{`no "lineage"`}, false},
		{"wrong types", `{"version": 1, "serial": 1, "lineage": "l", "experiments": {"a": {"trials": {"t": {"seq": "one"}}}}}`, []string{"shape of a state"}, false},
		// A hand edit gone wrong names the field and its line, not only what
		// is wrong (a state has hundreds of values).
		{"a string for a trial's value", "{\n\"version\": 1, \"serial\": 1, \"lineage\": \"l\",\n\"experiments\": {\"a\": {\"trials\": {\"t0000\": {\n\"value\": \"6.1\"}}}}}",
			[]string{`line 4, /experiments/a/trials/t0000/value: "6.1" is not a number`}, false},
		{"a string for the serial", "{\n\"version\": 1,\n\"serial\": \"68\", \"lineage\": \"l\", \"experiments\": {}}", []string{`line 3, /serial: a JSON string where a number belongs`}, false},
		{"a number for a trial's status", "{\"version\": 1, \"serial\": 1, \"lineage\": \"l\", \"experiments\": {\"a\": {\"trials\": {\"t0000\": {\"status\": 3}}}}}",
			[]string{`line 1, /experiments/a/trials/t0000/status: a JSON number where a string belongs`}, false},
		{"null experiment", `{"version": 1, "serial": 1, "lineage": "l", "experiments": {"a": null}}`, []string{`experiment "a" set to null`}, false},
		{"negative version", `{"version": -1}`, []string{"invalid format version -1"}, false},
		{"newer", `{"version": 2, "serial": 5, "lineage": "l", "experiments": {}, "future": true}`, []string{"format version 2", "newer trialform", "up to 1"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newManager(t)
			if err := os.MkdirAll(m.Dir(), 0o755); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(m.Dir(), "state.json")
			if err := os.WriteFile(path, []byte(tc.content), 0o644); err != nil {
				t.Fatal(err)
			}
			check := func(op string, err error) {
				t.Helper()
				if err == nil {
					t.Fatalf("%s succeeded on a %s file", op, tc.name)
				}
				var ce *CorruptError
				var ne *NewerFormatError
				if tc.newer && !errors.As(err, &ne) || !tc.newer && !errors.As(err, &ce) {
					t.Errorf("%s: error %T: %v", op, err, err)
				}
				msg := err.Error()
				for _, w := range append(tc.want, path, "not modified") {
					if !strings.Contains(msg, w) {
						t.Errorf("%s: error %q does not say %q", op, msg, w)
					}
				}
				if !tc.newer && !strings.Contains(msg, "state.json.backup") {
					t.Errorf("%s: error %q does not point to the backup", op, msg)
				}
			}
			_, err := m.Load()
			check("Load", err)
			for _, s := range []*State{New(), {Version: 1, Serial: 0, Lineage: "l", Experiments: map[string]*Experiment{}}, {Version: 1, Serial: 5, Lineage: "l", Experiments: map[string]*Experiment{}}} {
				check("Save", m.Save(s))
			}
			if got := readFile(t, path); string(got) != tc.content {
				t.Errorf("the file was modified:\n%s", got)
			}
			if got := dirNames(t, m); !reflect.DeepEqual(got, []string{"state.json"}) {
				t.Errorf("directory = %v", got)
			}
		})
	}
}

func TestSaveRefusesOtherLineageAndStaleSerial(t *testing.T) {
	m := newManager(t)
	s := sampleState(2)
	if err := m.Save(s); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(m.Dir(), "state.json")

	// Another state altogether.
	other := New()
	err := m.Save(other)
	var ce *ConflictError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "different state") || !strings.Contains(err.Error(), s.Lineage) {
		t.Errorf("saving another lineage: %v", err)
	}
	// Another manager (another process) loads, changes and saves; ours is
	// now stale.
	m2 := NewManager(m.Dir())
	s2, err := m2.Load()
	if err != nil {
		t.Fatal(err)
	}
	s2.Experiments["mnist"].Goal = "minimize"
	if err := m2.Save(s2); err != nil {
		t.Fatal(err)
	}
	before := readFile(t, path)
	s.Experiments["mnist"].Concurrency = 9
	err = m.Save(s)
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "serial 2 there, 1 when loaded") {
		t.Errorf("saving a stale state: %v", err)
	}
	if s.Serial != 1 {
		t.Errorf("refused save changed the serial to %d", s.Serial)
	}
	// Even an unchanged stale state is refused: it was loaded from
	// something else.
	if err := m.Save(s.Clone()); !errors.As(err, &ce) {
		t.Errorf("stale unchanged save: %v", err)
	}
	if !bytes.Equal(readFile(t, path), before) {
		t.Error("a refused save modified the file")
	}
	// A clone taken before a save is stale after it.
	s3, _ := m2.Load()
	old := s3.Clone()
	s3.Experiments["cifar"].Goal = "maximize"
	if err := m2.Save(s3); err != nil {
		t.Fatal(err)
	}
	old.Experiments["cifar"].Metric = "x"
	if err := m2.Save(old); !errors.As(err, &ce) {
		t.Errorf("saving a clone older than the file: %v", err)
	}
}

func TestSaveNoticesInPlaceEdit(t *testing.T) {
	m := newManager(t)
	s := sampleState(1)
	if err := m.Save(s); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(m.Dir(), "state.json")
	// Someone rewrites the file in place with a higher serial (same inode).
	b := readFile(t, path)
	b = bytes.Replace(b, []byte(`"serial": 1,`), []byte(`"serial": 7,`), 1)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write(b)
	f.Close()
	os.Chtimes(path, time.Now().Add(time.Hour), time.Now().Add(time.Hour))
	s.Experiments["mnist"].Goal = "minimize"
	var ce *ConflictError
	if err := m.Save(s); !errors.As(err, &ce) {
		t.Errorf("save over an in-place edited file: %v", err)
	}
	// And a corrupted file is noticed too.
	os.WriteFile(path, b[:10], 0o644)
	var co *CorruptError
	if err := m.Save(s); !errors.As(err, &co) {
		t.Errorf("save over a file corrupted after loading: %v", err)
	}
}

func TestSaveAfterFileRemoved(t *testing.T) {
	m := newManager(t)
	s := sampleState(1)
	if err := m.Save(s); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(m.Dir(), "state.json"))
	s.Experiments["mnist"].Goal = "minimize"
	if err := m.Save(s); err != nil {
		t.Fatalf("save after the file was removed: %v", err)
	}
	got, err := NewManager(m.Dir()).Load()
	if err != nil || got.Experiments["mnist"].Goal != "minimize" {
		t.Errorf("reload: %v", err)
	}
}

func TestSaveRejectsBadStates(t *testing.T) {
	m := newManager(t)
	for _, s := range []*State{nil, {Experiments: map[string]*Experiment{}}, {Version: 9, Lineage: "l"}} {
		if err := m.Save(s); err == nil {
			t.Errorf("Save(%+v) succeeded", s)
		}
	}
	if _, err := os.Stat(m.Dir()); !os.IsNotExist(err) {
		t.Error("a refused save created the directory")
	}
}

func TestUpgradeFromV0(t *testing.T) {
	fixture := readFile(t, filepath.Join("testdata", "v0.json"))
	m := newManager(t)
	os.MkdirAll(m.Dir(), 0o755)
	path := filepath.Join(m.Dir(), "state.json")
	if err := os.WriteFile(path, fixture, 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := m.Load()
	if err != nil {
		t.Fatal(err)
	}
	if s.Version != FormatVersion || s.Serial != 7 || s.Lineage != "5b7c1d2e-0f4a-4b8e-9c6d-3e2f1a0b9c8d" {
		t.Errorf("header after upgrade: version %d serial %d lineage %s", s.Version, s.Serial, s.Lineage)
	}
	e := s.Experiment("mnist")
	if e == nil || e.ID != "k3x9p2qa" || e.NextSeq != 2 || e.MaxTrials != 10 || len(e.Trials) != 2 {
		t.Fatalf("experiment after upgrade: %+v", e)
	}
	a, b := e.Trials["Ab3dE"], e.Trials["Zz9yX"]
	if a == nil || b == nil || a.ParameterID != 0 || b.ParameterID != 1 || *a.Value != 0.91 || a.Params["optimizer"] != "adam" || b.Handle["pid"] != "4242" {
		t.Errorf("trials after upgrade: %+v %+v", a, b)
	}
	// Unchanged: not rewritten. Changed: written as the current format,
	// with the v0 file as the backup.
	if err := m.Save(s); err != nil || !bytes.Equal(readFile(t, path), fixture) {
		t.Fatalf("unchanged save of an upgraded state rewrote it (err %v)", err)
	}
	b.Status = Lost
	if err := m.Save(s); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(readFile(t, path+".backup"), fixture) {
		t.Error("backup is not the v0 file")
	}
	var head struct{ Version, Serial int }
	json.Unmarshal(readFile(t, path), &head)
	if head.Version != 1 || head.Serial != 8 {
		t.Errorf("rewritten file: %+v", head)
	}
}

func TestUpgradeChain(t *testing.T) {
	// A chain with a missing step is an error, not a silent skip.
	saved := upgrades
	t.Cleanup(func() { upgrades = saved })
	upgrades = map[int]func([]byte) ([]byte, error){}
	m := newManager(t)
	os.MkdirAll(m.Dir(), 0o755)
	os.WriteFile(filepath.Join(m.Dir(), "state.json"), readFile(t, filepath.Join("testdata", "v0.json")), 0o644)
	_, err := m.Load()
	var ce *CorruptError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "no upgrade from format version 0") {
		t.Errorf("Load without an upgrade step: %v", err)
	}
	// Bad v0 content is reported as such.
	upgrades = saved
	os.WriteFile(filepath.Join(m.Dir(), "state.json"), []byte(`{"version": 0, "lineage": "l", "experiments": [{"id": "x"}]}`), 0o644)
	if _, err := m.Load(); !errors.As(err, &ce) || !strings.Contains(err.Error(), "has no name") {
		t.Errorf("Load of a bad v0 file: %v", err)
	}
}

func TestNonFiniteValuesSurviveSaveLoad(t *testing.T) {
	m := newManager(t)
	s := sampleState(2)
	tr := s.Experiments["mnist"].Trials["t00001"]
	tr.Value = ptr(math.NaN())
	tr.Final = map[string]float64{"default": math.Inf(-1)}
	if err := m.Save(s); err != nil {
		t.Fatal(err)
	}
	got, err := NewManager(m.Dir()).Load()
	if err != nil {
		t.Fatal(err)
	}
	g := got.Experiments["mnist"].Trials["t00001"]
	if g.Value == nil || *g.Value == *g.Value || g.Final["default"] > -1e308 {
		t.Errorf("non-finite values after reload: %v %v", g.Value, g.Final)
	}
}

// A caller that retries by itself (the controller) replaces the
// conflict's "run the command again", also through a wrapping error.
func TestAdviseConflict(t *testing.T) {
	ce := &ConflictError{Path: "p", FileLineage: "l", StateLineage: "l", FileSerial: 7, StateSerial: 6}
	err := fmt.Errorf("save state: experiment %q was changed: %w", "w", ce)
	got := AdviseConflict(err, "retried at the next pass")
	want := `save state: experiment "w" was changed: the state at p was changed by someone else since it was loaded (serial 7 there, 6 when loaded); not saving over it: retried at the next pass`
	if got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	if !strings.HasSuffix(err.Error(), ": run the command again") {
		t.Fatalf("the error itself: %v", err)
	}
	other := errors.New("x")
	if AdviseConflict(other, "y") != "x" {
		t.Fatal("an error without a conflict changed")
	}
}
