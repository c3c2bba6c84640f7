package command_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/trialform/trialform/internal/command"
	"github.com/trialform/trialform/internal/procfs"
	"github.com/trialform/trialform/internal/proctest"
	"github.com/trialform/trialform/state"
)

var update = os.Getenv("UPDATE_GOLDEN") != ""

// binDir holds the real trialform binary the scripts run.
var binDir string

func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "__supervise" {
		// In-process tests that start local trials: the test binary is
		// os.Executable(), which the local platform runs as supervisor.
		os.Exit(command.Main())
	}
	dir, err := os.MkdirTemp("", "trialform-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binDir = dir
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..")
	// The CLI and, next to it as make build installs them, the standalone
	// supervisor that the local platform then uses for every trial.
	for _, b := range [][2]string{{"trialform", "./cmd/trialform"}, {"trialform-supervisor", "./cmd/trialform-supervisor"}} {
		cmd := exec.Command("go", "build", "-o", filepath.Join(dir, b[0]), b[1])
		cmd.Dir = root
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "build "+b[0]+":", err)
			os.Exit(1)
		}
	}
	code := m.Run()
	stopSharedServers()
	os.RemoveAll(dir)
	os.Exit(code)
}

// scriptProcs makes sure no script of one testscript.Run leaves a
// process behind. Setup notes each script's folder (setup, called first in
// Params.Setup); check, deferred around testscript.Run, then waits, once
// every script has ended, for the processes still running in those
// folders: after a minute (for trials that end on their own) they fail the
// test and are killed. Only the folders of this run count, so script runs
// of other tests in parallel are not waited for.
type scriptProcs struct {
	mu    sync.Mutex
	roots map[string]bool
}

func newScriptProcs() *scriptProcs { return &scriptProcs{roots: map[string]bool{}} }

// setup notes the folder testscript made for this run's scripts.
func (s *scriptProcs) setup(env *testscript.Env) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.roots[filepath.Dir(env.WorkDir)] = true
}

// check registers the wait: deferred after testscript.Run, its cleanup
// runs before testscript's own removes the folders.
func (s *scriptProcs) check(t *testing.T) {
	t.Cleanup(func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		for d := range s.roots {
			proctest.WaitGone(t, d, time.Minute)
		}
	})
}

// TestScripts runs the end-to-end scripts in testdata/scripts with the
// real binary and real python3 trial processes. UPDATE_GOLDEN=1 rewrites
// the files compared with cmp.
func TestScripts(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("end-to-end scripts are not short")
	}
	procs := newScriptProcs()
	defer procs.check(t)
	testscript.Run(t, testscript.Params{
		Dir:           "testdata/scripts",
		UpdateScripts: update,
		Condition:     scriptCondition,
		Setup: func(env *testscript.Env) error {
			procs.setup(env)
			env.Setenv("PATH", binDir+string(os.PathListSeparator)+env.Getenv("PATH"))
			env.Setenv("NO_COLOR", "1")
			env.Setenv("PYTHONDONTWRITEBYTECODE", "1")
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"waitfor":     cmdWaitFor,
			"trialcount":  cmdTrialCount,
			"sleep":       cmdSleep,
			"killtrial":   cmdKillTrial,
			"trialprocs":  cmdTrialProcs,
			"procsalive":  cmdProcsAlive,
			"jsonfield":   cmdJSONField,
			"waitfile":    cmdWaitFile,
			"cpexample":   cmdCopyExample,
			"waitlog":     cmdWaitLog,
			"uilogs":      cmdUILogs,
			"replace":     cmdReplace,
			"sshlab":      cmdSSHLab,
			"sshd":        cmdSSHD,
			"jsonschema":  cmdJSONSchema,
			"openpaifake": cmdOpenPAIFake,
			"dltsfake":    cmdDLTSFake,
			"amlfake":     cmdAMLFake,
		},
	})
}

type trialJSON struct {
	ID     string         `json:"id"`
	Status string         `json:"status"`
	Params map[string]any `json:"params"`
	Metric *float64       `json:"metric"`
	Reason string         `json:"reason"`
}

type stateFile struct {
	Serial      uint64 `json:"serial"`
	Experiments map[string]struct {
		Trials map[string]struct {
			Status string            `json:"status"`
			Handle map[string]string `json:"handle"`
			Params map[string]any    `json:"params"`
		} `json:"trials"`
	} `json:"experiments"`
}

func readState(ts *testscript.TestScript) (*stateFile, error) {
	// As every lock-free reader does: state.json and the journal.
	s, err := state.NewManager(ts.MkAbs(".trialform")).Load()
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(s)
	if err != nil {
		return nil, err
	}
	var st stateFile
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, err
	}
	return &st, nil
}

// countStatus counts the trials of exp with status (or every trial for "ALL").
func countStatus(st *stateFile, exp, status string) int {
	n := 0
	for _, t := range st.Experiments[exp].Trials {
		if status == "ALL" || t.Status == status {
			n++
		}
	}
	return n
}

// waitfor EXP STATUS N [TIMEOUT]: poll the state file until at least N
// trials of EXP have STATUS (ALL for any).
func cmdWaitFor(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) < 3 {
		ts.Fatalf("usage: waitfor EXP STATUS N [TIMEOUT]")
	}
	n, _ := strconv.Atoi(args[2])
	timeout := 60 * time.Second
	if len(args) > 3 {
		timeout, _ = time.ParseDuration(args[3])
	}
	deadline := time.Now().Add(timeout)
	for {
		if st, err := readState(ts); err == nil && countStatus(st, args[0], args[1]) >= n {
			return
		}
		if time.Now().After(deadline) {
			st, _ := readState(ts)
			got := -1
			if st != nil {
				got = countStatus(st, args[0], args[1])
			}
			ts.Fatalf("waitfor: %d trials of %s %s after %s, want >= %d%s", got, args[0], args[1], timeout, n, logTails(ts, 40))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// logTails is the last lines of each *.log file of the script's work
// directory (the background controllers' and watchers' logs), for a
// failed wait to show what the processes it waited on were doing; the
// files in skip (absolute paths, shown already) are left out.
func logTails(ts *testscript.TestScript, lines int, skip ...string) string {
	logs, _ := filepath.Glob(filepath.Join(ts.MkAbs("."), "*.log"))
	var b strings.Builder
	for _, f := range logs {
		if slices.Contains(skip, f) {
			continue
		}
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		all := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
		if len(all) > lines {
			all = all[len(all)-lines:]
		}
		fmt.Fprintf(&b, "\n--- the last %d lines of %s:\n%s", len(all), filepath.Base(f), strings.Join(all, "\n"))
	}
	return b.String()
}

// trialcount FILE N [STATUS]: FILE holds `trials -json` output; it must
// list exactly N trials (with STATUS), all with distinct ids and params.
func cmdTrialCount(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) < 2 {
		ts.Fatalf("usage: trialcount FILE N [STATUS]")
	}
	var rows []trialJSON
	if err := json.Unmarshal([]byte(ts.ReadFile(args[0])), &rows); err != nil {
		ts.Fatalf("trialcount: %v", err)
	}
	want, _ := strconv.Atoi(args[1])
	ids := map[string]bool{}
	params := map[string]string{}
	n := 0
	for _, r := range rows {
		if ids[r.ID] {
			ts.Fatalf("trial %s listed twice", r.ID)
		}
		ids[r.ID] = true
		pb, _ := json.Marshal(r.Params)
		if other, dup := params[string(pb)]; dup {
			ts.Fatalf("trials %s and %s have the same parameters %s", other, r.ID, pb)
		}
		params[string(pb)] = r.ID
		if len(args) < 3 || r.Status == args[2] {
			n++
			if len(args) > 2 && args[2] == "SUCCEEDED" && r.Metric == nil {
				ts.Fatalf("trial %s SUCCEEDED without a metric", r.ID)
			}
		}
	}
	if (n == want) == neg {
		ts.Fatalf("trialcount: %d trials (status %v), want %d", n, args[2:], want)
	}
}

func cmdSleep(ts *testscript.TestScript, neg bool, args []string) {
	d, err := time.ParseDuration(args[0])
	if err != nil {
		ts.Fatalf("sleep: %v", err)
	}
	time.Sleep(d)
}

// killtrial EXP TRIAL: kill -9 a trial's supervisor and its process group
// (what a machine crash does to it).
func cmdKillTrial(ts *testscript.TestScript, neg bool, args []string) {
	st, err := readState(ts)
	if err != nil {
		ts.Fatalf("killtrial: %v", err)
	}
	t, ok := st.Experiments[args[0]].Trials[args[1]]
	if !ok {
		ts.Fatalf("killtrial: no trial %s/%s", args[0], args[1])
	}
	// The supervisor first (else it records the trial's death as a
	// failure), then the trial's process group.
	for _, key := range []string{"supervisor_pid", "pid", "pgid"} {
		id, err := strconv.Atoi(t.Handle[key])
		if err != nil || id <= 0 {
			continue
		}
		if key == "pgid" {
			id = -id
		}
		exec.Command("kill", "-9", "--", strconv.Itoa(id)).Run()
	}
	// The supervisor may run in its own group: kill every process whose
	// command line names the trial dir.
	// The absolute path: other scripts (other checkouts, on a shared
	// machine) run trials of the same names.
	dir := ts.MkAbs(filepath.Join(".trialform", "trials", args[0], args[1]))
	out, _ := exec.Command("pgrep", "-f", dir).Output()
	pids := strings.Fields(string(out))
	for _, f := range pids {
		exec.Command("kill", "-9", f).Run()
	}
	// kill returns before the processes are gone: wait until each is dead
	// (gone, or a zombie) so that the next plan cannot still see it.
	for _, key := range []string{"supervisor_pid", "pid"} {
		pids = append(pids, t.Handle[key])
	}
	deadline := time.Now().Add(10 * time.Second)
	for _, p := range pids {
		for alive(p) {
			if time.Now().After(deadline) {
				ts.Fatalf("killtrial: process %s still alive after kill -9", p)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// trialprocs EXP FILE: write the processes and process groups of EXP's
// trials, from the state's handles, to FILE (for procsalive after the
// state forgot them). It fails when there are none.
func cmdTrialProcs(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 {
		ts.Fatalf("usage: trialprocs EXP FILE")
	}
	st, err := readState(ts)
	if err != nil {
		ts.Fatalf("trialprocs: %v", err)
	}
	var lines []string
	for _, id := range sortedTrialIDs(st, args[0]) {
		h := st.Experiments[args[0]].Trials[id].Handle
		for _, key := range []string{"supervisor_pid", "pid", "pgid"} {
			if n, err := strconv.Atoi(h[key]); err == nil && n > 0 {
				lines = append(lines, key+" "+h[key])
			}
		}
	}
	if len(lines) == 0 {
		ts.Fatalf("trialprocs: no process of experiment %s in the state", args[0])
	}
	ts.Check(os.WriteFile(ts.MkAbs(args[1]), []byte(strings.Join(lines, "\n")+"\n"), 0o644))
}

func sortedTrialIDs(st *stateFile, exp string) []string {
	var ids []string
	for id := range st.Experiments[exp].Trials {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// procsalive FILE: succeed when a process, or a member of a process
// group, that trialprocs wrote to FILE is alive (not a zombie). Unlike
// pgrep on a command line, it cannot see another script's trials.
func cmdProcsAlive(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 1 {
		ts.Fatalf("usage: procsalive FILE")
	}
	b, err := os.ReadFile(ts.MkAbs(args[0]))
	ts.Check(err)
	var live []string
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		key, id, _ := strings.Cut(line, " ")
		if key == "pgid" {
			for _, pid := range groupMembers(id) {
				live = append(live, "pid "+pid+" of process group "+id)
			}
		} else if alive(id) {
			live = append(live, key+" "+id)
		}
	}
	if neg && len(live) > 0 {
		ts.Fatalf("alive: %s", strings.Join(live, ", "))
	}
	if !neg && len(live) == 0 {
		ts.Fatalf("none of the processes in %s is alive", args[0])
	}
}

// groupMembers lists the processes of process group pgid that are not
// zombies.
func groupMembers(pgid string) []string {
	all, _ := procfs.All()
	var out []string
	for _, st := range all {
		if !st.Gone() && strconv.Itoa(st.PGID) == pgid {
			out = append(out, strconv.Itoa(st.PID))
		}
	}
	return out
}

// alive reports whether process pid exists and is not a zombie.
func alive(pid string) bool {
	n, err := strconv.Atoi(pid)
	if err != nil {
		return false
	}
	st, err := procfs.Read(n)
	return err == nil && !st.Gone()
}

// jsonfield FILE PATH WANT: a dotted path into a JSON document.
func cmdJSONField(ts *testscript.TestScript, neg bool, args []string) {
	var v any
	if err := json.Unmarshal([]byte(ts.ReadFile(args[0])), &v); err != nil {
		ts.Fatalf("jsonfield: %v", err)
	}
	for _, k := range strings.Split(args[1], ".") {
		switch x := v.(type) {
		case map[string]any:
			v = x[k]
		case []any:
			i, _ := strconv.Atoi(k)
			if i < len(x) {
				v = x[i]
			} else {
				v = nil
			}
		}
	}
	got := fmt.Sprint(v)
	if (got == args[2]) == neg {
		ts.Fatalf("jsonfield %s: got %q, want %q", args[1], got, args[2])
	}
}

// waitfile PATH [TIMEOUT]: wait until PATH exists.
func cmdWaitFile(ts *testscript.TestScript, neg bool, args []string) {
	timeout := 30 * time.Second
	if len(args) > 1 {
		timeout, _ = time.ParseDuration(args[1])
	}
	deadline := time.Now().Add(timeout)
	for {
		if _, err := os.Stat(ts.MkAbs(args[0])); err == nil {
			return
		}
		if time.Now().After(deadline) {
			ts.Fatalf("waitfile: %s does not exist after %s%s", args[0], timeout, logTails(ts, 40))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// cpexample NAME DIR: copy examples/NAME (files only) into DIR.
func cmdCopyExample(ts *testscript.TestScript, neg bool, args []string) {
	_, file, _, _ := runtime.Caller(0)
	src := filepath.Join(filepath.Dir(file), "..", "..", "examples", args[0])
	entries, err := os.ReadDir(src)
	if err != nil {
		ts.Fatalf("cpexample: %v", err)
	}
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			ts.Fatalf("cpexample: %v", err)
		}
		if err := os.WriteFile(ts.MkAbs(filepath.Join(args[1], e.Name())), b, 0o644); err != nil {
			ts.Fatalf("cpexample: %v", err)
		}
	}
}

// waitlog FILE REGEXP [TIMEOUT]: wait until FILE (a background command's
// log) matches REGEXP ((?m) is on). With !, FILE must not match during
// the whole TIMEOUT.
func cmdWaitLog(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) < 2 {
		ts.Fatalf("usage: waitlog FILE REGEXP [TIMEOUT]")
	}
	re, err := regexp.Compile("(?m)" + args[1])
	if err != nil {
		ts.Fatalf("waitlog: %v", err)
	}
	timeout := 30 * time.Second
	if len(args) > 2 {
		if timeout, err = time.ParseDuration(args[2]); err != nil {
			ts.Fatalf("waitlog: %v", err)
		}
	}
	deadline := time.Now().Add(timeout)
	for {
		b, _ := os.ReadFile(ts.MkAbs(args[0]))
		if re.Match(b) {
			if neg {
				ts.Fatalf("waitlog: %s matches %q:\n%s", args[0], args[1], b)
			}
			return
		}
		if time.Now().After(deadline) {
			if neg {
				return
			}
			ts.Fatalf("waitlog: %s does not match %q after %s:\n%s%s", args[0], args[1], timeout, b, logTails(ts, 40, ts.MkAbs(args[0])))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// replace FILE OLD NEW: replace every OLD in FILE with NEW, writing FILE
// in place (as an editor that does not save by rename).
func cmdReplace(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 3 {
		ts.Fatalf("usage: replace FILE OLD NEW")
	}
	path := ts.MkAbs(args[0])
	b, err := os.ReadFile(path)
	if err != nil {
		ts.Fatalf("replace: %v", err)
	}
	if !strings.Contains(string(b), args[1]) {
		ts.Fatalf("replace: %s does not contain %q", args[0], args[1])
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		ts.Fatalf("replace: %v", err)
	}
	_, err = f.WriteString(strings.ReplaceAll(string(b), args[1], args[2]))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		ts.Fatalf("replace: %v", err)
	}
}
