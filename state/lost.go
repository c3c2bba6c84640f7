package state

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/trialform/trialform/internal/fsread"
)

// LostState describes what a state directory without a state file still
// holds of a state that was there: backups and metric series. Commands
// that would start a new state over it (plan, apply, watch) refuse and
// show it, because new trials would be numbered from t0000 again and
// collide with the lost ones.
type LostState struct {
	Dir     string       // the state directory
	Backups []BackupInfo // state.json.backup first, then the kept ones
	// Experiments lists the experiments that left traces (metric series,
	// backups, and whatever the caller adds: trial directories), sorted.
	Experiments []string
	// Traces lists, one line each, what was found besides backups.
	Traces []string
	// Where names the missing state for people when it is not a file
	// of Dir (a backend elsewhere: "Secret ns/name"), and Afresh says how
	// to remove what is left; "" for the local backend.
	Where, Afresh string
	// Running lists the trials (EXP/TRIAL) their platforms still run,
	// as far as the caller could tell.
	Running []string
}

// BackupInfo is one backup file.
type BackupInfo struct {
	Path        string
	Lineage     string
	Serial      uint64
	Experiments []string
	Trials      int
	Problem     string // set when the file cannot be read as a state
}

// Lost returns what the state directory holds of a lost state, or nil when
// there is a state file, or no trace of one.
func (m *Manager) Lost() (*LostState, error) {
	ok, err := m.Exists()
	if err != nil || ok {
		return nil, err
	}
	ls := &LostState{Dir: m.dir}
	ents, err := os.ReadDir(m.dir)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", m.dir, err)
	}
	exps := map[string]bool{}
	for _, e := range ents {
		name := e.Name()
		if !strings.HasPrefix(name, FileName+backupSuffix) || !e.Type().IsRegular() {
			continue
		}
		path := filepath.Join(m.dir, name)
		b := BackupInfo{Path: path}
		data, err := readCapped(path)
		var s *State
		if err == nil {
			s, _, err = decode(path, data)
		}
		if err != nil {
			b.Problem = err.Error()
		} else {
			b.Lineage, b.Serial = s.Lineage, s.Serial
			for n, e := range s.Experiments {
				b.Experiments = append(b.Experiments, n)
				b.Trials += len(e.Trials)
				exps[n] = true
			}
			sort.Strings(b.Experiments)
		}
		ls.Backups = append(ls.Backups, b)
	}
	sort.SliceStable(ls.Backups, func(i, j int) bool {
		return filepath.Base(ls.Backups[i].Path) == FileName+backupSuffix && filepath.Base(ls.Backups[j].Path) != FileName+backupSuffix
	})
	if mds, err := os.ReadDir(filepath.Join(m.dir, metricsDir)); err == nil {
		var names []string
		for _, d := range mds {
			if d.IsDir() {
				names = append(names, d.Name())
			}
		}
		ls.AddTraces("metric series", names)
	}
	for n := range exps {
		ls.addExperiment(n)
	}
	if fi, err := os.Stat(m.journalPath()); err == nil && fi.Size() > 0 {
		ls.Traces = append(ls.Traces, fmt.Sprintf("the state journal %s (%d bytes of changes made after the lost state.json was last written)", m.journalPath(), fi.Size()))
	}
	if len(ls.Backups) == 0 && len(ls.Traces) == 0 {
		return nil, nil
	}
	return ls, nil
}

// AddTraces records what kind of files were found for experiments (for
// example "trial directories"); nothing when names is empty.
func (ls *LostState) AddTraces(what string, names []string) {
	if len(names) == 0 {
		return
	}
	sort.Strings(names)
	ls.Traces = append(ls.Traces, fmt.Sprintf("%s of experiment(s) %s", what, strings.Join(names, ", ")))
	for _, n := range names {
		ls.addExperiment(n)
	}
}

func (ls *LostState) addExperiment(n string) {
	i := sort.SearchStrings(ls.Experiments, n)
	if i < len(ls.Experiments) && ls.Experiments[i] == n {
		return
	}
	ls.Experiments = append(ls.Experiments, "")
	copy(ls.Experiments[i+1:], ls.Experiments[i:])
	ls.Experiments[i] = n
}

// String says what was found and how to recover.
func (ls *LostState) String() string {
	var b strings.Builder
	path := filepath.Join(ls.Dir, FileName)
	if ls.Where != "" {
		fmt.Fprintf(&b, "there is no state %s, but what a lost state left is still there:\n", ls.Where)
	} else {
		fmt.Fprintf(&b, "there is no state file %s, but %s holds what a lost state left:\n", path, ls.Dir)
	}
	for _, bk := range ls.Backups {
		if bk.Problem != "" {
			fmt.Fprintf(&b, "  - %s: unreadable (%s)\n", filepath.Base(bk.Path), bk.Problem)
			continue
		}
		fmt.Fprintf(&b, "  - %s: lineage %s, serial %d, %d trial(s) of experiment(s) %s\n",
			filepath.Base(bk.Path), bk.Lineage, bk.Serial, bk.Trials, orNone(bk.Experiments))
	}
	for _, t := range ls.Traces {
		fmt.Fprintf(&b, "  - %s\n", t)
	}
	if len(ls.Running) > 0 {
		fmt.Fprintf(&b, "  - %d trial(s) still running: %s\n", len(ls.Running), strings.Join(ls.Running, ", "))
	}
	b.WriteString("New trials would be numbered from t0000 again, over the lost ones, so nothing is planned. Recover the state first:\n")
	or := ""
	for _, bk := range ls.Backups {
		if bk.Problem == "" {
			fmt.Fprintf(&b, "  - restore the backup (it may lack the last change): cp %s %s\n", bk.Path, path)
			or = "or "
			break
		}
	}
	exps := ls.Experiments
	if len(exps) == 0 {
		exps = []string{"EXPERIMENT"}
	}
	fmt.Fprintf(&b, "  - %srebuild it from what the platforms still hold (trials, their results):\n", or)
	for _, e := range exps {
		fmt.Fprintf(&b, "      trialform import -all %s\n", e)
	}
	if ls.Afresh != "" {
		fmt.Fprintf(&b, "To start afresh and keep none of it, %s.", ls.Afresh)
	} else {
		fmt.Fprintf(&b, "To start afresh and keep none of it, move %s away.", ls.Dir)
	}
	if len(ls.Running) > 0 {
		b.WriteString(" That leaves the running trials running: to stop them, rebuild the state (import -all), then run trialform destroy.")
	}
	return b.String()
}

func orNone(names []string) string {
	if len(names) == 0 {
		return "(none)"
	}
	return strings.Join(names, ", ")
}

// readCapped reads a regular file of at most 1 GiB.
func readCapped(path string) ([]byte, error) {
	return fsread.ReadFile(path, 1<<30)
}
