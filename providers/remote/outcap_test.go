package remote

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/trialform/trialform/internal/procfs"
	"github.com/trialform/trialform/providers"
	"golang.org/x/sys/unix"
)

// onDisk is the space a file takes on disk (holes not counted).
func onDisk(t *testing.T, p string) int64 {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Stat(p, &st); err != nil {
		t.Fatal(err)
	}
	return st.Blocks * 512
}

// A trial's stdout and stderr are capped on the machine (the first and
// the latest half of the limit kept), and every metric line printed on
// stdout still arrives: the intermediate results in the dropped middle
// and a final result after 100 MB of output.
func TestOutputCappedMetricsKept(t *testing.T) {
	l := testLab(t)
	cfg := labConfig(t, l)
	cfg.Machines = cfg.Machines[:1]
	const limit = 4 << 20
	cfg.OutputLimit = limit
	r := newRemote(t, cfg)
	code := t.TempDir()
	// The first metric line crosses the start of the freed middle (2 MiB).
	prog := `import sys
sys.stdout.write("a" * (2 * 1024 * 1024 - 11) + "\n")
print("trialform: intermediate -1")
line = "x" * 1023 + "\n"
for i in range(100):
    sys.stdout.write(line * 1024)
    sys.stdout.write("y" * 100 + "\r" + "trialform: intermediate %d\n" % i)
sys.stderr.write(("e" * 1023 + "\n") * 20480)
print("trialform: 7")
`
	if err := os.WriteFile(filepath.Join(code, "flood.py"), []byte(prog), 0o644); err != nil {
		t.Fatal(err)
	}
	h, err := r.Start(ctx(t), trialReq("cap", "t", "python3 flood.py", code))
	if err != nil {
		t.Fatal(err)
	}
	var ms []providers.Metric
	off := map[string]int64{}
	for {
		o, err := r.Read(ctx(t), providers.ReadRequest{Experiment: "cap", TrialID: "t", MetricsOffset: off})
		if err != nil {
			t.Fatal(err)
		}
		ms = append(ms, o.Metrics...)
		off = o.MetricsOffset
		if o.Phase.Ended() {
			if o.Phase != providers.PhaseSucceeded {
				t.Fatalf("trial ended %s: %s", o.Phase, o.Reason)
			}
			if !strings.Contains(o.Note, "stdout is over the 4 MiB kept per trial") || !strings.Contains(o.Note, "stderr is over") {
				t.Errorf("note %q does not say the output was cut", o.Note)
			}
			// one more: what the last read left
			o, err = r.Read(ctx(t), providers.ReadRequest{Experiment: "cap", TrialID: "t", MetricsOffset: off})
			if err != nil {
				t.Fatal(err)
			}
			ms = append(ms, o.Metrics...)
			break
		}
	}
	var got []string
	for _, m := range ms {
		if m.Garbage != "" {
			t.Fatalf("garbage metric %+v", m)
		}
		got = append(got, m.Type+":"+m.Value)
	}
	want := []string{"PERIODICAL:-1"}
	for i := 0; i < 100; i++ {
		want = append(want, fmt.Sprintf("PERIODICAL:%d", i))
	}
	want = append(want, "FINAL:7")
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("metrics\n got %v\nwant %v", got, want)
	}
	dir := h["dir"]
	for _, f := range []string{"stdout", "stderr"} {
		if n := onDisk(t, filepath.Join(dir, f)); n > limit+(1<<20) {
			t.Errorf("%s takes %d bytes on disk, over the %d limit", f, n, limit)
		}
	}
	lg := logs(t, r, "cap", "t")
	if !strings.Contains(lg, "not kept") || !strings.HasSuffix(lg, strings.Repeat("e", 1023)+"\n") || strings.Contains(lg, "\x00") || len(lg) > 2*limit+(1<<20) {
		t.Errorf("logs: %d bytes, want about %d with a line in place of the dropped middle and no NUL", len(lg), 2*limit)
	}
}

// The cap goes on when the supervisor alone is killed (kill -9, the OOM
// killer): it runs in a child that ends with the trial, after a last pass
// over what the trial wrote before it ended. The trial floods only once
// its supervisor is gone and ends at once: nothing else caps that output.
// The test adopts the orphans (a subreaper) and reaps them only at the
// end, so the trial stays a zombie whatever this machine's init does: the
// child must see it ended all the same.
func TestOutputCappedAfterSupervisorKilled(t *testing.T) {
	l := testLab(t)
	cfg := labConfig(t, l)
	adopted := adoptOrphans(t)
	cfg.Machines = cfg.Machines[:1]
	const limit = 4 << 20
	cfg.OutputLimit = limit
	r := newRemote(t, cfg)
	code := t.TempDir()
	// Waits for "go" (the supervisor is dead by then), floods 16 MiB and
	// ends at once (os._exit: no teardown for a tick to fall in).
	prog := `import os, sys, time
go = os.path.join(os.environ["NNI_SYS_DIR"], "go")
deadline = time.time() + 600
while not os.path.exists(go):
    if time.time() > deadline:
        sys.exit("no go")
    time.sleep(0.01)
for i in range(16):
    sys.stdout.write(("x" * 1023 + "\n") * 1024)
sys.stdout.flush()
os._exit(0)
`
	if err := os.WriteFile(filepath.Join(code, "flood.py"), []byte(prog), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Start(ctx(t), trialReq("cap", "k", "python3 flood.py", code)); err != nil {
		t.Fatal(err)
	}
	o := waitPhase(t, r, "cap", "k", providers.PhaseRunning)
	sup, err := strconv.Atoi(o.Handle["supervisor_pid"])
	if err != nil {
		t.Fatalf("no supervisor pid in %v", o.Handle)
	}
	dir := o.Handle["dir"]
	goFile := filepath.Join(dir, "go")
	t.Cleanup(func() { _ = os.WriteFile(goFile, nil, 0o644) }) // a failed test's trial ends
	trial, _ := strconv.Atoi(o.Handle["pid"])
	var ticker []int // (not the trial: before its exec it names dir too)
	for _, p := range childrenNaming(sup, dir) {
		if p != trial {
			ticker = append(ticker, p)
		}
	}
	*adopted = append(*adopted, append(ticker, sup, trial)...)
	if len(ticker) == 0 {
		t.Fatal("the status says running but the supervisor has no capping child yet")
	}
	if err := syscall.Kill(sup, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(goFile, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	waitPhase(t, r, "cap", "k", providers.PhaseLost) // ended without its supervisor
	// The supervisor's capping child ends after its last pass.
	waitNoProcess(t, dir)
	if n := onDisk(t, filepath.Join(dir, "stdout")); n > limit+(1<<20) {
		t.Errorf("stdout takes %d bytes on disk after its supervisor was killed, over the %d limit", n, limit)
	}
}

// adoptOrphans makes the test process the subreaper of what it starts
// (sshd's sessions and their orphans), until the test ends: then it reaps
// the pids the test added to the list it returns.
func adoptOrphans(t *testing.T) *[]int {
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		t.Logf("cannot become a subreaper (%v): the trial's end is seen when this machine's init reaps it", err)
	}
	var pids []int
	t.Cleanup(func() {
		_ = unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)
		for _, p := range pids {
			if p > 0 {
				var ws unix.WaitStatus
				_, _ = unix.Wait4(p, &ws, unix.WNOHANG, nil)
			}
		}
	})
	return &pids
}

// childrenNaming lists the children of ppid that name dir on their
// command line.
func childrenNaming(ppid int, dir string) []int {
	var pids []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmd, err1 := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		st, err2 := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err1 != nil || err2 != nil || !strings.Contains(string(cmd), dir) {
			continue
		}
		if s, err := procfs.Parse(pid, st); err == nil && s.PPID == ppid {
			pids = append(pids, pid)
		}
	}
	return pids
}

// The lines the output cap tore at either edge of the freed middle are
// left out of logs: a secret printed on every line would otherwise show
// as a piece that no mask recognises as it. The first edge (512 KiB)
// falls inside the 26-byte line's secret.
func TestOutputCappedTearsNoLine(t *testing.T) {
	l := testLab(t)
	cfg := labConfig(t, l)
	cfg.Machines = cfg.Machines[:1]
	cfg.OutputLimit = 1 << 20
	r := newRemote(t, cfg)
	const line = "using s3cr3t-Tok3n-9f8e7d"
	if _, err := r.Start(ctx(t), trialReq("torn", "t", "yes '"+line+"' | head -n 200000", t.TempDir())); err != nil {
		t.Fatal(err)
	}
	waitPhase(t, r, "torn", "t", providers.PhaseSucceeded)
	notes := 0
	for _, got := range strings.Split(strings.TrimSuffix(logs(t, r, "torn", "t"), "\n"), "\n") {
		switch {
		case got == line:
		case strings.HasPrefix(got, "[trialform: ") && strings.Contains(got, "bytes of stdout not kept here"):
			notes++
		default:
			t.Errorf("logs show a torn line %q", got)
		}
	}
	if notes != 1 {
		t.Errorf("%d notes of the cut, want 1", notes)
	}
}
