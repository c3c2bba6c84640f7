package conformance

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/trialform/trialform/providers"
)

func testReadUnknown(e *env) {
	o, err := e.p.Read(e.ctx(), providers.ReadRequest{Experiment: e.exp, TrialID: "nope"})
	if err != nil {
		e.t.Fatalf("Read unknown: %v", err)
	}
	if o.Exists {
		e.t.Errorf("Read unknown: Exists = true: %s", show(o))
	}
	// Stop of a trial that never existed is fine too.
	e.stop("nope", false)
	e.stop("nope", true)
}

// nniScript is a trial that speaks NNI's protocol by hand (no nni
// package): the local file protocol when NNI_PLATFORM is "local", else
// NNI's stdout lines. It checks its environment and waits for a go file.
const nniScript = `
import json, os, sys, time
env = {k: os.environ.get(k) for k in ["NNI_PLATFORM", "NNI_TRIAL_JOB_ID", "NNI_EXP_ID", "NNI_TRIAL_SEQ_ID",
    "NNI_OUTPUT_DIR", "NNI_TRIAL_COMMAND_CHANNEL", "TRIALFORM_EXPERIMENT", "TRIALFORM_TRIAL_ID",
    "TRIALFORM_OUTPUT_DIR", "FOO"]}
env["cwd"] = os.getcwd()
cfg = json.load(open(os.path.join(os.environ["NNI_SYS_DIR"], "parameter.cfg")))
alone = json.load(open(os.environ["TRIALFORM_PARAMS"]))
env["cfg"] = cfg
env["params_match"] = alone == cfg["parameters"]
env["output_dir_exists"] = os.path.isdir(os.environ["NNI_OUTPUT_DIR"])
with open(sys.argv[1] + ".env", "w") as f:
    json.dump(env, f)
d = os.path.join(os.environ["NNI_SYS_DIR"], ".nni")
os.makedirs(d, exist_ok=True)
mf = open(os.path.join(d, "metrics"), "ab")
def send(t, seq, v):
    s = json.dumps({"parameter_id": cfg["parameter_id"], "trial_job_id": os.environ["NNI_TRIAL_JOB_ID"],
                    "type": t, "sequence": seq, "value": json.dumps(v)})
    data = (s + "\n").encode("utf8")
    if os.environ["NNI_PLATFORM"] != "local":
        print("NNISDK_MEb'%s'" % s, flush=True)
        return
    mf.write(b"ME%06d%b" % (len(data), data))
    mf.flush()
send("PERIODICAL", 0, 0.5)
while not os.path.exists(sys.argv[1] + ".go"):
    time.sleep(0.02)
send("PERIODICAL", 1, {"default": float("nan"), "loss": 0.25})
send("FINAL", 0, {"default": cfg["parameters"]["lr"] * 10, "loss": 0.125})
`

func testNNIFileProtocol(e *env) {
	py := e.python()
	e.script("nni_trial.py", nniScript)
	mark := filepath.Join(e.code, "mark")
	req := e.req("t1", shq(py)+" nni_trial.py "+shq(mark))
	req.Env = map[string]string{"FOO": "bar", "NNI_PLATFORM": "evil", "NNI_TRIAL_COMMAND_CHANNEL": "ws://evil"}
	e.start(req)
	c := e.collect("t1")
	o := c.phase(providers.PhaseRunning)
	if !o.Exists || o.Lineage != req.Lineage {
		e.t.Errorf("running trial: exists %v lineage %q, want %q", o.Exists, o.Lineage, req.Lineage)
	}
	e.waitFile(mark + ".env")
	c.until("the first intermediate result", func(providers.Observation) bool { return len(c.metrics) >= 1 })
	e.touch(mark + ".go")
	o = c.phase(providers.PhaseSucceeded)
	if o.ExitCode == nil || *o.ExitCode != 0 {
		e.t.Errorf("exit code %v, want 0", o.ExitCode)
	}
	if o.StartedAt == nil || o.EndedAt == nil || o.EndedAt.Before(*o.StartedAt) {
		e.t.Errorf("started %v ended %v", o.StartedAt, o.EndedAt)
	}
	c.read()
	checkMetrics(e.t, c.metrics,
		providers.Metric{Type: "PERIODICAL", Sequence: 0, ParameterID: 7, Value: "0.5"},
		providers.Metric{Type: "PERIODICAL", Sequence: 1, ParameterID: 7, Value: `{"default":null,"loss":0.25}`},
		providers.Metric{Type: "FINAL", ParameterID: 7, Value: `{"default":0.1,"loss":0.125}`},
	)

	var env map[string]any
	b, err := os.ReadFile(mark + ".env")
	if err != nil {
		e.t.Fatal(err)
	}
	if err := json.Unmarshal(b, &env); err != nil {
		e.t.Fatal(err)
	}
	want := map[string]any{
		"NNI_PLATFORM": e.s.opts.NNIPlatform, "NNI_TRIAL_JOB_ID": "t1", "NNI_EXP_ID": req.ExperimentID,
		"NNI_TRIAL_SEQ_ID": "4", "NNI_TRIAL_COMMAND_CHANNEL": nil, "TRIALFORM_EXPERIMENT": e.exp,
		"TRIALFORM_TRIAL_ID": "t1", "FOO": "bar", "params_match": true, "output_dir_exists": true,
	}
	for k, w := range want {
		if env[k] != w {
			e.t.Errorf("trial saw %s = %v, want %v", k, env[k], w)
		}
	}
	if env["NNI_OUTPUT_DIR"] != env["TRIALFORM_OUTPUT_DIR"] || env["NNI_OUTPUT_DIR"] == nil {
		e.t.Errorf("output dirs differ: %v vs %v", env["NNI_OUTPUT_DIR"], env["TRIALFORM_OUTPUT_DIR"])
	}
	if e.s.opts.CodeCopied {
		cwd, _ := env["cwd"].(string)
		if _, err := os.Stat(filepath.Join(cwd, "nni_trial.py")); cwd == "" || cwd == e.code || err != nil {
			e.t.Errorf("cwd %v, want a copy of the code dir %s", env["cwd"], e.code)
		}
	} else if cwd, _ := filepath.EvalSymlinks(e.code); env["cwd"] != cwd && env["cwd"] != e.code {
		e.t.Errorf("cwd %v, want the code dir %s", env["cwd"], e.code)
	}
	cfg, _ := json.Marshal(env["cfg"])
	mustJSONEq(e.t, "parameter.cfg", string(cfg), `{"parameter_id":7,"parameter_source":"algorithm","parameters":{"lr":0.01,"opt":"adam"},"parameter_index":0}`)
}

func testStdoutProtocol(e *env) {
	e.script("out.sh", `
echo "epoch 1"
echo 'trialform: intermediate {"loss": 0.5}'
echo 'trialform: intermediate 0.75'
echo "NNISDK_MEb'{\"parameter_id\": 7, \"trial_job_id\": \"t1\", \"type\": \"PERIODICAL\", \"sequence\": 9, \"value\": \"0.8\"}'"
printf 'trialform: {"default": 0.25, "acc": NaN}'
`)
	e.start(e.req("t1", "sh out.sh"))
	c := e.collect("t1")
	c.phase(providers.PhaseSucceeded)
	c.read()
	checkMetrics(e.t, c.metrics,
		providers.Metric{Type: "PERIODICAL", Sequence: 0, ParameterID: 7, Value: `{"loss":0.5}`},
		providers.Metric{Type: "PERIODICAL", Sequence: 1, ParameterID: 7, Value: `0.75`},
		providers.Metric{Type: "PERIODICAL", Sequence: 9, ParameterID: 7, Value: `0.8`},
		providers.Metric{Type: "FINAL", ParameterID: 7, Value: `{"default":0.25,"acc":null}`},
	)
}

func testMetricRegex(e *env) {
	e.script("katib.sh", `
echo "epoch=1 loss=0.9 accuracy=0.1"
echo "loss=0.3 accuracy=-1.5e-3"
echo "note: nothing here"
`)
	req := e.req("t1", "sh katib.sh")
	req.MetricRegex = `(?P<name>[a-z]+)=(?P<value>[-+]?[0-9.]+(?:[eE][-+]?[0-9]+)?)`
	e.start(req)
	c := e.collect("t1")
	c.phase(providers.PhaseSucceeded)
	c.read()
	checkMetrics(e.t, c.metrics,
		providers.Metric{Type: "PERIODICAL", Sequence: 0, ParameterID: 7, Value: `{"epoch":1,"loss":0.9,"accuracy":0.1}`},
		providers.Metric{Type: "PERIODICAL", Sequence: 1, ParameterID: 7, Value: `{"loss":0.3,"accuracy":-0.0015}`},
		providers.Metric{Type: "FINAL", ParameterID: 7, Value: `{"epoch":1,"loss":0.3,"accuracy":-0.0015}`},
	)

	// A failing trial gets no synthetic final result.
	req2 := e.req("t2", "echo loss=0.5; exit 1")
	req2.MetricRegex = req.MetricRegex
	e.start(req2)
	c2 := e.collect("t2")
	c2.phase(providers.PhaseFailed)
	c2.read()
	checkMetrics(e.t, c2.metrics, providers.Metric{Type: "PERIODICAL", Sequence: 0, ParameterID: 7, Value: `{"loss":0.5}`})
}

// runCounter is a trial that counts its runs in a file and waits for a go
// file.
func (e *env) runCounter(id string) (providers.StartRequest, string) {
	mark := filepath.Join(e.code, id)
	return e.req(id, "echo run >> "+shq(mark+".runs")+"; while [ ! -e "+shq(mark+".go")+" ]; do sleep 0.02; done; echo 'trialform: 1'"), mark
}

func runs(e *env, mark string) int {
	b, _ := os.ReadFile(mark + ".runs")
	return strings.Count(string(b), "run")
}

func testConcurrentStart(e *env) {
	req, mark := e.runCounter("t1")
	const n = 4
	var wg sync.WaitGroup
	handles := make([]providers.Handle, n)
	errs := make([]error, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			e.track(req.TrialID)
			handles[i], errs[i] = e.p.Start(e.ctx(), req)
		}(i)
	}
	wg.Wait()
	for i := range errs {
		if errs[i] != nil {
			e.t.Fatalf("Start %d: %v", i, errs[i])
		}
	}
	e.waitFile(mark + ".runs")
	c := e.collect("t1")
	c.phase(providers.PhaseRunning)
	// A later Start adopts as well.
	h := e.start(req)
	for i := range handles {
		if handles[i]["pid"] != h["pid"] {
			e.t.Errorf("handle %d = %v, adopting Start returned %v", i, handles[i], h)
		}
	}
	e.touch(mark + ".go")
	c.phase(providers.PhaseSucceeded)
	if r := runs(e, mark); r != 1 {
		e.t.Errorf("the trial ran %d times, want 1", r)
	}
}

func testStartEnded(e *env) {
	req, mark := e.runCounter("t1")
	e.touch(mark + ".go")
	e.start(req)
	c := e.collect("t1")
	c.phase(providers.PhaseSucceeded)
	h := e.start(req)
	if len(h) == 0 {
		e.t.Error("Start of an ended trial returned no handle")
	}
	o := c.read()
	if o.Phase != providers.PhaseSucceeded {
		e.t.Errorf("after Start of an ended trial: %s", show(o))
	}
	refuseOthers(e, req)
	// Synchronise on the trial's end (a second run would have been
	// launched by now, and would end: the go file exists), then count.
	if o := c.phase(providers.PhaseSucceeded); fmt.Sprint(o.Handle) != fmt.Sprint(h) {
		e.t.Errorf("after the refused Starts the handle is %v, was %v: the trial ran again", o.Handle, h)
	}
	if r := runs(e, mark); r != 1 {
		e.t.Errorf("the trial ran %d times, want 1", r)
	}
}

// refuseOthers checks that Start refuses, with a permanent error naming
// import, to take over req's trial for another trial of the same id:
// another state (lineage), another instance of the experiment (destroyed
// and created again), another generation, other parameters.
func refuseOthers(e *env, req providers.StartRequest) {
	e.t.Helper()
	others := map[string]func(*providers.StartRequest){
		"another lineage":             func(r *providers.StartRequest) { r.Lineage = "another-state" },
		"another experiment instance": func(r *providers.StartRequest) { r.ExperimentID = "another-instance" },
		"another generation":          func(r *providers.StartRequest) { r.Generation = req.Generation + 1 },
		"other parameters":            func(r *providers.StartRequest) { r.Params = map[string]any{"lr": 0.5, "opt": "sgd"} },
	}
	for what, change := range others {
		other := req
		change(&other)
		for _, resume := range []bool{false, true} {
			other.Resume = resume
			if _, err := e.p.Start(e.ctx(), other); err == nil || !providers.IsPermanent(err) || !strings.Contains(err.Error(), "trialform import "+req.Experiment+" "+req.TrialID) {
				e.t.Errorf("Start (resume %v) for %s: %v, want a permanent error naming trialform import", resume, what, err)
			}
		}
	}
}

// testOtherOwner: a running trial is not adopted for another trial of the
// same id either.
func testOtherOwner(e *env) {
	req, mark := e.runCounter("t1")
	req.Generation = 2
	h := e.start(req)
	c := e.collect("t1")
	c.phase(providers.PhaseRunning)
	refuseOthers(e, req)
	// The same trial is still adopted, and a read reports its owner.
	if h2 := e.start(req); fmt.Sprint(h2) != fmt.Sprint(h) {
		e.t.Errorf("adopting Start returned %v, first Start %v", h2, h)
	}
	o := c.read()
	if m := req.Owner().Mismatch(o.Owner); m != "" || o.Owner.Lineage == "" {
		e.t.Errorf("Read reports owner %+v: %s", o.Owner, m)
	}
	e.touch(mark + ".go")
	c.phase(providers.PhaseSucceeded)
	if r := runs(e, mark); r != 1 {
		e.t.Errorf("the trial ran %d times, want 1", r)
	}
}

// testPurgeExperiment: destroy's PurgeExperiment removes every trial of
// the experiment and lineage, ended and running ones, and nothing of
// another lineage.
func testPurgeExperiment(e *env) {
	pg, ok := e.p.(providers.ExperimentPurger)
	e.need(CapPurgeExperiment, &ok)
	e.start(e.req("ended", "exit 0"))
	e.collect("ended").phase(providers.PhaseSucceeded)
	e.start(e.req("runs", "sleep 1000"))
	e.collect("runs").phase(providers.PhaseRunning)
	foreign := e.req("foreign", "exit 0")
	foreign.Lineage = "another-state"
	e.start(foreign)
	e.collect("foreign").phase(providers.PhaseSucceeded)

	if err := pg.PurgeExperiment(e.ctx(), e.exp, "lineage-"+e.exp); err != nil {
		e.t.Fatal(err)
	}
	for _, id := range []string{"ended", "runs"} {
		if o := e.collect(id).read(); o.Exists {
			e.t.Errorf("after PurgeExperiment trial %s: %s", id, show(o))
		}
	}
	if o := e.collect("foreign").read(); !o.Exists {
		e.t.Errorf("PurgeExperiment removed another state's trial")
	}
	if l, ok := e.p.(providers.Lister); ok {
		obs, err := l.List(e.ctx(), e.exp)
		if err != nil || len(obs) != 1 || obs[0].TrialID != "foreign" {
			e.t.Errorf("List after PurgeExperiment = %d trials, %v; want only foreign", len(obs), err)
		}
	}
	// A new trial under a purged id starts afresh.
	r := e.req("ended", "echo 'trialform: 3'")
	r.ExperimentID = "re-created"
	e.start(r)
	c := e.collect("ended")
	c.phase(providers.PhaseSucceeded)
	c.read()
	checkMetrics(e.t, c.metrics, providers.Metric{Type: "FINAL", ParameterID: 7, Value: "3"})
	if err := pg.PurgeExperiment(e.ctx(), e.exp, "another-state"); err != nil {
		e.t.Fatal(err)
	}
	if o := e.collect("foreign").read(); o.Exists {
		e.t.Errorf("after purging its lineage, trial foreign: %s", show(o))
	}
}

// testKillNewSession: what a trial starts in a new session (setsid)
// neither outlives Stop nor the trial's own end.
func testKillNewSession(e *env) {
	e.need(CapKillNewSession, nil)
	for _, tc := range []struct {
		id, tail string
		stop     bool
	}{
		{"stopped", "wait", true},
		{"exits", "exit 0", false},
	} {
		mark := filepath.Join(e.code, tc.id)
		e.start(e.req(tc.id, "setsid sleep 1000 </dev/null >/dev/null 2>&1 & echo $! > "+shq(mark+".tmp")+"; mv "+shq(mark+".tmp")+" "+shq(mark)+"; "+tc.tail))
		e.waitFile(mark)
		b, _ := os.ReadFile(mark)
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil {
			e.t.Fatalf("pid %q: %v", b, err)
		}
		c := e.collect(tc.id)
		if tc.stop {
			c.phase(providers.PhaseRunning)
			e.stop(tc.id, false)
		} else {
			c.phase(providers.PhaseSucceeded)
		}
		if !e.pidGone(pid) {
			e.t.Errorf("trial %s: the process it started in a new session (%d) outlived it", tc.id, pid)
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

func testFailing(e *env) {
	e.start(e.req("t1", "echo doomed >&2; exit 3"))
	c := e.collect("t1")
	o := c.phase(providers.PhaseFailed)
	if o.ExitCode == nil || *o.ExitCode != 3 {
		e.t.Errorf("exit code %v, want 3", o.ExitCode)
	}
	if !strings.Contains(o.Reason, "3") {
		e.t.Errorf("reason %q does not mention the exit status", o.Reason)
	}
	// A program that does not exist fails too (Args, no shell).
	req := e.req("t2", "")
	req.Args = []string{filepath.Join(e.code, "no-such-program")}
	e.track(req.TrialID)
	if _, err := e.p.Start(e.ctx(), req); err == nil {
		e.collect("t2").phase(providers.PhaseFailed)
	}
}

func testStopGroup(e *env) {
	mark := filepath.Join(e.code, "child")
	e.start(e.req("t1", "sleep 1000 & echo $! > "+shq(mark+".tmp")+"; mv "+shq(mark+".tmp")+" "+shq(mark)+"; wait"))
	c := e.collect("t1")
	o := c.phase(providers.PhaseRunning)
	e.waitFile(mark)
	b, _ := os.ReadFile(mark)
	child, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		e.t.Fatalf("child pid %q: %v", b, err)
	}
	e.stop("t1", false)
	o = c.read()
	if o.Phase != providers.PhaseKilled || o.PastMaxDuration {
		e.t.Errorf("after Stop: %s (past max_duration %v), want killed by Stop", show(o), o.PastMaxDuration)
	}
	if !e.pidGone(child) {
		e.t.Errorf("the trial's child %d survived Stop", child)
	}
	if pid, err := strconv.Atoi(c.last.Handle["pid"]); err == nil && !e.pidGone(pid) {
		e.t.Errorf("the trial %d survived Stop", pid)
	}
	// Stopping again, and purging, are fine.
	e.stop("t1", false)
	e.stop("t1", true)
	if o := c.read(); o.Exists {
		e.t.Errorf("after Stop with Purge: %s", show(o))
	}
}

func testStopEscalates(e *env) {
	mark := filepath.Join(e.code, "stubborn")
	e.start(e.req("t1", "trap '' TERM; touch "+shq(mark)+"; while :; do sleep 0.05; done"))
	c := e.collect("t1")
	c.phase(providers.PhaseRunning)
	e.waitFile(mark)
	begin := time.Now()
	e.stop("t1", false)
	if o := c.read(); o.Phase != providers.PhaseKilled {
		e.t.Errorf("after Stop: %s, want killed", show(o))
	}
	if d := time.Since(begin); d < e.s.opts.StopGrace/2 {
		e.t.Errorf("Stop returned after %s, before the grace period %s", d, e.s.opts.StopGrace)
	}
}

// resumeScript checkpoints into the output dir on its first attempt and
// then hangs; a later attempt finds the checkpoint and reports it.
const resumeScript = `
if [ -f "$TRIALFORM_OUTPUT_DIR/ckpt" ]; then
  echo "trialform: $(cat "$TRIALFORM_OUTPUT_DIR/ckpt")"
  exit 0
fi
echo 2 > "$NNI_OUTPUT_DIR/ckpt.tmp" && mv "$NNI_OUTPUT_DIR/ckpt.tmp" "$NNI_OUTPUT_DIR/ckpt"
echo 'trialform: intermediate 1'
sleep 1000
`

func testResumeAfterLoss(e *env) {
	e.need(CapResume, yes(e.s.opts.Lose != nil))
	req := e.req("t1", resumeScript)
	e.start(req)
	c := e.collect("t1")
	o := c.until("the first attempt to checkpoint", func(o providers.Observation) bool {
		return o.Phase == providers.PhaseRunning && len(c.metrics) == 1
	})
	e.s.opts.Lose(e.t, o.Handle)
	c.phase(providers.PhaseLost)
	// Without Resume, Start of a lost trial is allowed to relaunch too; the
	// planner always resumes, as here.
	req.Resume = true
	e.start(req)
	c.phase(providers.PhaseSucceeded)
	c.read()
	checkMetrics(e.t, c.metrics,
		providers.Metric{Type: "PERIODICAL", Sequence: 0, ParameterID: 7, Value: "1"},
		providers.Metric{Type: "FINAL", ParameterID: 7, Value: "2"},
	)
}

func testMaxDuration(e *env) {
	req := e.req("t1", "sleep 1000")
	req.MaxDuration = 500 * time.Millisecond
	e.start(req)
	c := e.collect("t1")
	o := c.phase(providers.PhaseKilled)
	if !strings.Contains(o.Reason, "max_duration") {
		e.t.Errorf("reason %q does not mention max_duration", o.Reason)
	}
	if !o.PastMaxDuration {
		e.t.Errorf("stopped at max_duration, but PastMaxDuration is not set (the trial would end FAILED, not EARLY_STOPPED)")
	}
	if o.StartedAt != nil && o.EndedAt != nil && o.EndedAt.Sub(*o.StartedAt) < req.MaxDuration {
		e.t.Errorf("stopped after %s, before max_duration %s", o.EndedAt.Sub(*o.StartedAt), req.MaxDuration)
	}
}

func testOffsets(e *env) {
	mark := filepath.Join(e.code, "offsets")
	e.start(e.req("t1", `
for i in 0 1 2; do echo "trialform: intermediate $i"; done
while [ ! -e `+shq(mark+".go")+` ]; do sleep 0.02; done
for i in 3 4; do echo "trialform: intermediate $i"; done
echo "trialform: 5"
`))
	c := e.collect("t1")
	c.until("three intermediate results", func(providers.Observation) bool { return len(c.metrics) >= 3 })
	for i := 0; i < 5; i++ {
		if o := c.read(); len(o.Metrics) != 0 {
			e.t.Errorf("read %d returned %d old metrics again", i, len(o.Metrics))
		}
	}
	e.touch(mark + ".go")
	c.phase(providers.PhaseSucceeded)
	c.read()
	c.read()
	want := []providers.Metric{}
	for i := 0; i < 5; i++ {
		want = append(want, providers.Metric{Type: "PERIODICAL", Sequence: i, ParameterID: 7, Value: strconv.Itoa(i)})
	}
	want = append(want, providers.Metric{Type: "FINAL", ParameterID: 7, Value: "5"})
	checkMetrics(e.t, c.metrics, want...)
	// A fresh reader (no offsets) sees everything once.
	fresh := e.collect("t1")
	fresh.read()
	checkMetrics(e.t, fresh.metrics, want...)
}

func testNoInjection(e *env) {
	pwned := filepath.Join(e.code, "pwned")
	values := []string{
		`"; touch ` + pwned + `"`,
		`'; touch ` + pwned + `; '`,
		`$(touch ` + pwned + `)`,
		"`touch " + pwned + "`",
	}
	for i, v := range values {
		id := "shell" + strconv.Itoa(i)
		out := filepath.Join(e.code, id+".out")
		req := e.req(id, "printf '%s' "+shq(v)+" > "+shq(out))
		req.Params = map[string]any{"x": v}
		e.start(req)
		e.collect(id).phase(providers.PhaseSucceeded)
		if b, _ := os.ReadFile(out); string(b) != v {
			e.t.Errorf("shell trial %d printed %q, want %q", i, b, v)
		}

		id = "args" + strconv.Itoa(i)
		out = filepath.Join(e.code, id+".out")
		req = e.req(id, "")
		req.Args = []string{"/bin/sh", "-c", `printf '%s' "$1" > "$2"`, "sh", v, out}
		req.Params = map[string]any{"x": v}
		e.start(req)
		e.collect(id).phase(providers.PhaseSucceeded)
		if b, _ := os.ReadFile(out); string(b) != v {
			e.t.Errorf("args trial %d printed %q, want %q", i, b, v)
		}
	}
	if _, err := os.Stat(pwned); err == nil {
		e.t.Errorf("a parameter value ran as a command: %s exists", pwned)
	}
}

func testLogs(e *env) {
	ls, ok := e.p.(providers.LogStreamer)
	e.need(CapLogs, &ok)
	e.start(e.req("t1", "echo hello out; echo hello err >&2"))
	c := e.collect("t1")
	c.phase(providers.PhaseSucceeded)
	var b strings.Builder
	if err := ls.Logs(e.ctx(), providers.LogsRequest{Experiment: e.exp, TrialID: "t1", Out: &b}); err != nil {
		e.t.Fatal(err)
	}
	if !strings.Contains(b.String(), "hello out") || !strings.Contains(b.String(), "hello err") {
		e.t.Errorf("Logs = %q", b.String())
	}
	// Follow returns once the trial ended, with everything it wrote.
	mark := filepath.Join(e.code, "follow")
	e.start(e.req("t2", "echo first; while [ ! -e "+shq(mark)+" ]; do sleep 0.02; done; echo last"))
	e.collect("t2").phase(providers.PhaseRunning)
	done := make(chan error, 1)
	var fb syncBuilder
	go func() {
		done <- ls.Logs(e.ctx(), providers.LogsRequest{Experiment: e.exp, TrialID: "t2", Follow: true, Out: &fb})
	}()
	select {
	case err := <-done:
		e.t.Fatalf("Logs Follow returned while the trial runs: %v", err)
	case <-time.After(300 * time.Millisecond):
	}
	e.touch(mark)
	if err := <-done; err != nil {
		e.t.Fatal(err)
	}
	if s := fb.String(); !strings.Contains(s, "first") || !strings.Contains(s, "last") {
		e.t.Errorf("Logs Follow = %q", s)
	}
	if err := ls.Logs(e.ctx(), providers.LogsRequest{Experiment: e.exp, TrialID: "nope", Out: &b}); err == nil {
		e.t.Error("Logs of an unknown trial: want an error")
	}
}

type syncBuilder struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuilder) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuilder) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func testList(e *env) {
	l, ok := e.p.(providers.Lister)
	e.need(CapList, &ok)
	if obs, err := l.List(e.ctx(), e.exp); err != nil || len(obs) != 0 {
		e.t.Fatalf("List of an empty experiment = %v, %v", obs, err)
	}
	e.start(e.req("a", "exit 0"))
	e.start(e.req("b", "sleep 1000"))
	e.collect("a").phase(providers.PhaseSucceeded)
	// b may still be pending when a has ended (a loaded node, a slow
	// scheduler): wait for it to run, not for a's end to imply it.
	e.collect("b").phase(providers.PhaseRunning)
	obs, err := l.List(e.ctx(), e.exp)
	if err != nil {
		e.t.Fatal(err)
	}
	if len(obs) != 2 {
		e.t.Fatalf("List = %d trials, want 2", len(obs))
	}
	got := map[string]providers.Observation{}
	for _, o := range obs {
		got[o.TrialID] = o
		if !o.Exists || o.Lineage != "lineage-"+e.exp || o.Experiment != e.exp {
			e.t.Errorf("listed %s", show(o))
		}
	}
	if got["a"].Phase != providers.PhaseSucceeded || got["b"].Phase != providers.PhaseRunning {
		e.t.Errorf("listed phases a=%s b=%s", got["a"].Phase, got["b"].Phase)
	}
	// An UnknownLister leaves out what the caller knows, and only that.
	if ul, ok := e.p.(providers.UnknownLister); ok {
		for _, c := range []struct {
			known []string
			want  string
		}{{nil, "a b"}, {[]string{"a"}, "b"}, {[]string{"b", "zz"}, "a"}, {[]string{"a", "b"}, ""}} {
			obs, err := ul.ListUnknown(e.ctx(), e.exp, func(id string) bool { return slices.Contains(c.known, id) })
			var ids []string
			for _, o := range obs {
				ids = append(ids, o.TrialID)
				if o.Phase != got[o.TrialID].Phase || o.Lineage != got[o.TrialID].Lineage {
					e.t.Errorf("ListUnknown listed %s, List %s", show(o), show(got[o.TrialID]))
				}
			}
			if strings.Join(ids, " ") != c.want || err != nil {
				e.t.Errorf("ListUnknown knowing %v = %v, %v; want %q", c.known, ids, err, c.want)
			}
		}
	}
	e.stop("b", true)
	if obs, _ := l.List(e.ctx(), e.exp); len(obs) != 1 {
		e.t.Errorf("after purging b, List = %d trials", len(obs))
	}
}

// testImport checks an Importer: a trial started by one lineage is
// adopted by another with the parameters and sequence number it was
// started with, List and Read then report the new lineage, and a trial the
// platform does not hold is ErrNotFound.
func testImport(e *env) {
	im, ok := e.p.(providers.Importer)
	e.need(CapImport, &ok)
	r := e.req("imp", "sleep 1000")
	r.Params = map[string]any{"lr": 0.5, "opt": "sgd", "layers": float64(3)}
	e.start(r)
	e.collect("imp").phase(providers.PhaseRunning)
	got, err := im.Import(e.ctx(), providers.ImportRequest{Experiment: e.exp, TrialID: "imp", Lineage: "adopter"})
	if err != nil {
		e.t.Fatal(err)
	}
	if got.Seq != r.Seq || got.ParameterID != r.ParameterID || fmt.Sprint(got.Params) != fmt.Sprint(r.Params) {
		e.t.Errorf("Import = seq %d pid %d params %v; want %d %d %v", got.Seq, got.ParameterID, got.Params, r.Seq, r.ParameterID, r.Params)
	}
	if got.PreviousLineage != r.Lineage {
		e.t.Errorf("previous lineage %q, want %q", got.PreviousLineage, r.Lineage)
	}
	if o := got.Observation; !o.Exists || o.Phase != providers.PhaseRunning || len(o.Handle) == 0 || o.Lineage != "adopter" {
		e.t.Errorf("imported observation %s lineage %q handle %v", show(o), o.Lineage, o.Handle)
	}
	if l, ok := e.p.(providers.Lister); ok {
		obs, err := l.List(e.ctx(), e.exp)
		if err != nil || len(obs) != 1 || obs[0].Lineage != "adopter" {
			e.t.Errorf("List after import = %+v, %v", obs, err)
		}
	}
	if o := e.collect("imp").read(); o.Phase != providers.PhaseRunning {
		e.t.Errorf("Read after import: %s", show(o))
	}
	if _, err := im.Import(e.ctx(), providers.ImportRequest{Experiment: e.exp, TrialID: "nope", Lineage: "adopter"}); !errors.Is(err, providers.ErrNotFound) {
		e.t.Errorf("Import of an unknown trial = %v, want ErrNotFound", err)
	}
	e.stop("imp", true)
}

// testSpecDiff: the live object's rendering (Read's Observation.Spec) is
// what Spec renders for the request that started it, and a changed
// request renders differently.
func testSpecDiff(e *env) {
	sd, ok := e.p.(providers.SpecDiffer)
	e.need(CapSpecDiff, &ok)
	req := e.req("t1", "sleep 1000")
	e.start(req)
	o := e.collect("t1").until("a live spec", func(o providers.Observation) bool { return o.Spec != "" || o.Phase.Ended() })
	want, err := sd.Spec(req)
	if err != nil {
		e.t.Fatalf("Spec: %v", err)
	}
	if o.Spec == "" || o.Spec != want {
		e.t.Errorf("live spec:\n%s\nSpec renders:\n%s", o.Spec, want)
	}
	// Another command and another GPU count (a platform whose GPUs come
	// with its compute target renders only the command).
	changed := req
	changed.Shell, changed.GPUs = "sleep 999", req.GPUs+1
	if other, err := sd.Spec(changed); err != nil || other == want {
		e.t.Errorf("a changed trial renders the same spec (%v):\n%s", err, other)
	}
	e.stop("t1", false)
}

// testLocation: a started trial's handle names where it runs, on one
// line, the same every time; an empty handle names nothing and does not
// fail.
func testLocation(e *env) {
	lc, ok := e.p.(providers.Locator)
	e.need(CapLocation, &ok)
	h := e.start(e.req("t1", "true"))
	loc := lc.Location(h)
	if loc == "" || strings.ContainsAny(loc, "\n\r") || lc.Location(h) != loc {
		e.t.Errorf("Location(%v) = %q: want one stable, non-empty line", h, loc)
	}
	_ = lc.Location(providers.Handle{})
	e.collect("t1").ended()
}

// testTensorBoardSync: the trial's TensorBoard directory
// ($TRIALFORM_TENSORBOARD_DIR) is copied incrementally: new files whole,
// a grown file from where the copy ends, unchanged files not at all, and
// never a symbolic link.
func testTensorBoardSync(e *env) {
	ts, ok := e.p.(providers.TensorBoardSyncer)
	e.need(CapTensorBoardSync, &ok)
	ready, goOn := filepath.Join(e.code, "tb-ready"), filepath.Join(e.code, "tb-go")
	h := e.start(e.req("t1", `d="$TRIALFORM_TENSORBOARD_DIR"; mkdir -p "$d/sub" && printf abc > "$d/events.1" && printf x > "$d/sub/events.2" && ln -s /etc/hostname "$d/link" && touch `+shq(ready)+
		`; while [ ! -e `+shq(goOn)+` ]; do sleep 0.02; done; printf def >> "$d/events.1"`))
	e.waitFile(ready)
	dest := e.t.TempDir()
	sync := func() providers.SyncStats {
		e.t.Helper()
		st, err := ts.SyncTensorBoard(e.ctx(), providers.SyncRequest{Experiment: e.exp, TrialID: "t1", Handle: h, Dest: dest})
		if err != nil {
			e.t.Fatalf("SyncTensorBoard: %v", err)
		}
		return st
	}
	read := func(rel string) string {
		b, _ := os.ReadFile(filepath.Join(dest, rel))
		return string(b)
	}
	if st := sync(); st.Files != 2 || st.Bytes != 4 || read("events.1") != "abc" || read("sub/events.2") != "x" {
		e.t.Errorf("first sync: %+v, events.1 %q, sub/events.2 %q; want 2 files, 4 bytes", st, read("events.1"), read("sub/events.2"))
	}
	if _, err := os.Lstat(filepath.Join(dest, "link")); err == nil {
		e.t.Error("a symbolic link was copied")
	}
	e.touch(goOn)
	e.collect("t1").phase(providers.PhaseSucceeded)
	if st := sync(); st.Files != 1 || st.Bytes != 3 || read("events.1") != "abcdef" {
		e.t.Errorf("sync after an append: %+v, events.1 %q; want 1 file, the 3 new bytes", st, read("events.1"))
	}
	if st := sync(); st.Files != 0 || st.Bytes != 0 {
		e.t.Errorf("sync of unchanged files copied %+v", st)
	}
}
