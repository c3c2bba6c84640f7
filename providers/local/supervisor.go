package local

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/trialform/trialform/internal/fsx"
	"github.com/trialform/trialform/providers"
	"github.com/trialform/trialform/providers/trialproto"
)

// Tail poll interval of the supervisor reading the trial's stdout file.
const tailInterval = 100 * time.Millisecond

// maxLine is the longest stdout line scanned for metrics (NNI's own limit on
// a metric record is one million bytes); longer lines are only logged.
const maxLine = 1 << 20

// maxChunk bounds one read of the trial's stdout.
const maxChunk = 64 << 10

// SupervisorMain is the entry point of the hidden `trialform __supervise
// DIR` command: args are the arguments after "__supervise" (a leading
// "__supervise" is skipped too), i.e. the trial directory. It runs one
// attempt of the trial described by DIR/spec.json and returns the exit
// status for os.Exit (0 when it recorded an outcome, whatever the trial's).
//
// The trial runs in its own process group with cwd = the code dir, stdin
// /dev/null, stdout and stderr appended to DIR/stdout and DIR/stderr (the
// trial writes them directly, so it keeps running, and its output is kept,
// even if the supervisor dies), and the protocol environment (see
// trialproto.Env) plus PYTHONPATH prefixed with the lib dir. With GPU
// scheduling on, CUDA_VISIBLE_DEVICES lists the GPUs the attempt got, and is
// empty for a trial that asked for none, so it cannot grab a GPU.
//
// The supervisor tails DIR/stdout for metric lines (trialproto.ParseStdoutLine)
// and appends them as records to DIR/metrics.stdout. When the trial was
// given a metric regex, the last value of each name matched becomes a
// synthetic FINAL record when the trial exits 0 without having reported a
// final result (on stdout or in .nni/metrics).
//
// SIGTERM or SIGINT (Stop) and max_duration send SIGTERM to the trial's
// group and SIGKILL after the grace period. When the trial's main process
// exits, whatever it left in its group is killed. SIGHUP is ignored.
func SupervisorMain(args []string) int {
	if len(args) > 0 && args[0] == "__supervise" {
		args = args[1:]
	}
	if len(args) == 1 && args[0] == hostArg {
		if err := hostMain(); err != nil {
			fmt.Fprintf(os.Stderr, "trialform supervisor host: %v\n", err)
			return 1
		}
		return 0
	}
	if len(args) != 1 {
		fmt.Fprintln(os.Stderr, "usage: trialform __supervise TRIAL_DIR | -host")
		return 2
	}
	if err := supervise(args[0]); err != nil {
		fmt.Fprintf(os.Stderr, "trialform supervisor: %v\n", err)
		return 1
	}
	return 0
}

type supervisor struct {
	dir string
	sp  *spec
	// params are the spec's parameters with their numbers as written
	// (json.Number): parameter.cfg shows exactly what the plan chose.
	params map[string]any
	st     status
	ctl    attemptCtl
	ready  func()   // tells Start the status shows the attempt running or ended; nil once called
	log    *os.File // the status log, open for appending
}

// readyPipe returns the readiness pipe Start passed (see readyFDEnv), or
// nil. The descriptor is kept from the trial (close-on-exec) and the
// variable from the trial's environment.
func readyPipe() *os.File { return inheritedFile(readyFDEnv, "ready") }

// inheritedFile returns the descriptor named by env (kept from the trial:
// close-on-exec, and the variable removed), or nil.
func inheritedFile(env, name string) *os.File {
	v, ok := os.LookupEnv(env)
	if !ok {
		return nil
	}
	_ = os.Unsetenv(env)
	fd, err := strconv.Atoi(v)
	if err != nil || fd < 3 {
		return nil
	}
	syscall.CloseOnExec(fd)
	return os.NewFile(uintptr(fd), name)
}

// signalReady tells Start that status.log shows the attempt running or
// ended.
func (s *supervisor) signalReady() {
	if s.ready == nil {
		return
	}
	s.ready()
	s.ready = nil
}

// attemptCtl is what differs between a supervisor of one trial (its own
// process: supervise) and one trial of a supervisor host (host.go).
type attemptCtl struct {
	// ready is called once the status shows the attempt running or ended.
	ready func()
	// stop receives a value for each stop request (Stop left stop.json):
	// the first terminates the trial, a second kills it.
	stop <-chan struct{}
	// signalRest sends sig to the trial's processes outside its process
	// group (started in other sessions or groups); main is the trial's
	// main process, 0 once it was reaped.
	signalRest func(main int, sig syscall.Signal)
	// killRest kills them until none is left, or d passed.
	killRest func(d time.Duration)
	// host marks the status of an attempt run by a supervisor host.
	host bool
	// startProc starts the trial's main process (default cmd.Start), and
	// waited is told when it was reaped: a host keeps its reaper of
	// orphans off the trials' main processes in between.
	startProc func(*exec.Cmd) error
	waited    func(pid int)
}

func (s *supervisor) path(name string) string { return filepath.Join(s.dir, name) }

// writeStatus appends the status to status.log, without an fsync: no file
// of a trial dir is made durable by itself. After a machine crash (which
// ends every trial) the state's journal says which trials ended; one it
// does not record as ended is run again, whatever its status.log kept.
func (s *supervisor) writeStatus() error {
	return appendStatus(s.log, &s.st, false)
}

// end records the outcome. A record that cannot be written (the trial
// dir unwritable for a while: EPERM, EROFS, ENOSPC, ...) is kept and
// written again, with backoff, for as long as this supervisor lives:
// meanwhile the trial reads as running (its supervisor is alive), and once
// the directory is writable again its real exit status is recorded; a
// supervisor that gave up would leave it ended with no exit status.
func (s *supervisor) end(outcome, reason string, code *int, sig string) error {
	now := time.Now().UTC()
	s.st.State, s.st.Outcome, s.st.Reason, s.st.ExitCode, s.st.Signal, s.st.EndedAt = stateEnded, outcome, reason, code, sig, &now
	err := s.writeStatus()
	if err != nil {
		err = s.retryEnd(err)
	}
	if err == nil {
		s.signalReady()
	}
	return err
}

// endRetryMax bounds the wait between two tries of an end record.
const endRetryMax = 10 * time.Second

// retryEnd writes the end record again until it is written; first is the
// first try's error.
func (s *supervisor) retryEnd(first error) error {
	fmt.Fprintf(os.Stderr, "trialform supervisor: %s: cannot record the trial's end (%v): trying again, every %s at most, until the directory is writable again (the trial is not lost meanwhile)\n", s.dir, first, endRetryMax)
	wait := 100 * time.Millisecond
	for tries := 2; ; tries++ {
		time.Sleep(wait)
		wait = min(2*wait, endRetryMax)
		// A failed write may have left part of the record: this one
		// starts on a line of its own (a line that does not decode is
		// skipped by readers).
		if _, err := s.log.Write([]byte{'\n'}); err != nil {
			continue
		}
		if err := s.writeStatus(); err == nil {
			fmt.Fprintf(os.Stderr, "trialform supervisor: %s: recorded the trial's end at try %d\n", s.dir, tries)
			return nil
		}
	}
}

// selfStart is this process's start time (procStartTime), read once: a
// supervisor host records it for every attempt it runs.
var selfStart = sync.OnceValue(func() uint64 { return procStartTime(os.Getpid()) })

func supervise(dir string) error {
	ready := readyPipe()
	if ready != nil {
		defer ready.Close()
	}
	// The launch lock is the status log Start opened for appending, and
	// locked: the records go through it.
	launch := inheritedFile(launchFDEnv, "launch-lock")
	if launch != nil {
		defer launch.Close() // also on the error paths before the first status
	}
	signal.Ignore(syscall.SIGHUP)
	if err := becomeSubreaper(); err != nil {
		fmt.Fprintf(os.Stderr, "trialform supervisor: cannot become a child subreaper (processes the trial starts in a new session may outlive it): %v\n", err)
	}
	sigc := make(chan os.Signal, 4)
	signal.Notify(sigc, syscall.SIGTERM, syscall.SIGINT)
	stop := make(chan struct{}, 4)
	go func() {
		for range sigc {
			stop <- struct{}{}
		}
	}()
	ctl := attemptCtl{
		stop: stop,
		// Everything below this process but the trial's group: this
		// subreaper's orphans and what the trial made in other groups.
		signalRest: func(main int, sig syscall.Signal) { signalOutsideGroup(descendants(os.Getpid()), main, sig) },
		killRest:   killDescendants,
	}
	if ready != nil {
		ctl.ready = func() {
			_, _ = ready.Write([]byte{1})
			ready.Close()
		}
	}
	return runAttempt(dir, launch, ctl)
}

// runAttempt runs the attempt described by dir/spec.json to its end and
// records it in dir's status log: through launch (Start's locked
// descriptor, unlocked once the first record is written) when not nil.
func runAttempt(dir string, launch *os.File, ctl attemptCtl) error {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	sp, err := readSpecExact(dir)
	if err != nil {
		return err
	}
	if sp == nil {
		return fmt.Errorf("%s has no %s", dir, specFile)
	}
	s := &supervisor{dir: dir, sp: sp, params: sp.Params, ctl: ctl, ready: ctl.ready, log: launch}
	if s.log == nil {
		if s.log, err = openStatusLog(dir); err != nil {
			return err
		}
		defer s.log.Close()
	}
	s.st = status{
		Attempt: sp.Attempt, State: stateStarting, SupervisorPID: os.Getpid(),
		SupervisorStart: selfStart(), GPUs: sp.AssignedGPUs, Host: ctl.host, Dir: dir,
	}
	if err := s.writeStatus(); err != nil {
		return err
	}
	if launch != nil {
		// The status shows this attempt (and this live supervisor): readers
		// need not wait any more.
		_ = syscall.Flock(int(launch.Fd()), syscall.LOCK_UN)
	}
	select {
	case <-ctl.stop:
		reason, _ := s.stopRequest()
		return s.end(outcomeStopped, reason, nil, "")
	default:
	}

	cmd, tl, err := s.prepare()
	if err != nil {
		return s.end(outcomeStartFailed, "could not start the trial: "+err.Error(), nil, "")
	}
	defer tl.close()
	startProc, waited := ctl.startProc, ctl.waited
	if startProc == nil {
		startProc = (*exec.Cmd).Start
	}
	if waited == nil {
		waited = func(int) {}
	}
	if err := startProc(cmd); err != nil {
		closeFiles(cmd)
		return s.end(outcomeStartFailed, "could not start the trial: "+err.Error(), nil, "")
	}
	closeFiles(cmd)
	pid := cmd.Process.Pid
	now := time.Now().UTC()
	s.st.State, s.st.PID, s.st.PGID, s.st.StartTime, s.st.StartedAt = stateRunning, pid, pid, procStartTime(pid), &now
	s.st.StdoutFrom, s.st.MetricsFrom = &tl.off0, &tl.metricsFrom
	if err := s.writeStatus(); err != nil {
		// Without a status nobody can find the trial: do not let it run.
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		_ = cmd.Wait()
		waited(pid)
		return err
	}
	s.signalReady()

	waitc := make(chan error, 1)
	go func() {
		err := cmd.Wait()
		waited(pid)
		waitc <- err
	}()
	tailStop := make(chan struct{})
	tailDone := make(chan struct{})
	go func() {
		defer close(tailDone)
		tl.follow(tailStop)
	}()

	var maxC, killC <-chan time.Time
	if sp.MaxDuration > 0 {
		t := time.NewTimer(sp.MaxDuration)
		defer t.Stop()
		maxC = t.C
	}
	outcome, reason := "", ""
	terminate := func(grace time.Duration) {
		_ = syscall.Kill(-pid, syscall.SIGTERM)
		ctl.signalRest(pid, syscall.SIGTERM)
		killC = time.After(grace)
	}
wait:
	for {
		select {
		case <-ctl.stop:
			if outcome == "" {
				var grace time.Duration
				reason, grace = s.stopRequest()
				outcome = outcomeStopped
				terminate(grace)
			} else {
				_ = syscall.Kill(-pid, syscall.SIGKILL)
				ctl.signalRest(pid, syscall.SIGKILL)
			}
		case <-maxC:
			if outcome == "" {
				outcome, reason = outcomeMaxDuration, fmt.Sprintf("max_duration exceeded (%s)", sp.MaxDuration)
				terminate(sp.StopGrace)
			}
		case <-killC:
			_ = syscall.Kill(-pid, syscall.SIGKILL)
			ctl.signalRest(pid, syscall.SIGKILL)
		case <-waitc:
			break wait
		}
	}
	// Nothing of the trial outlives it: its process group, and what it
	// started in other sessions (re-parented to this subreaper).
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	ctl.killRest(5 * time.Second)
	close(tailStop)
	<-tailDone
	tl.lastFinalWins()
	s.st.Dropped, s.st.Overlong = tl.dropped, tl.overlongLines

	var code *int
	sig := ""
	ps := cmd.ProcessState
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		sig = ws.Signal().String()
	} else {
		c := ps.ExitCode()
		code = &c
	}
	if outcome == "" {
		switch {
		case sig != "":
			outcome, reason = outcomeSignaled, "signal: "+sig
		case *code != 0:
			outcome, reason = outcomeExited, "exit status "+strconv.Itoa(*code)
		default:
			outcome = outcomeExited
			if err := tl.finish(s.path(nniMetricsFile)); err != nil {
				fmt.Fprintf(os.Stderr, "trialform supervisor: synthetic final result: %v\n", err)
			}
		}
	}
	return s.end(outcome, reason, code, sig)
}

// stopRequest returns the reason and grace Stop left, or the defaults.
func (s *supervisor) stopRequest() (string, time.Duration) {
	var r stopRequest
	_ = readJSON(s.path(stopFile), &r)
	if r.Reason == "" {
		r.Reason = "stopped by trialform"
	}
	if r.Grace <= 0 {
		r.Grace = s.sp.StopGrace
	}
	if r.Grace <= 0 {
		r.Grace = 10 * time.Second
	}
	return r.Reason, r.Grace
}

// prepare builds the trial command and the stdout tailer.
func (s *supervisor) prepare() (*exec.Cmd, *tailer, error) {
	sp := s.sp
	var re *regexp.Regexp
	if sp.MetricRegex != "" {
		var err error
		if re, err = regexp.Compile(sp.MetricRegex); err != nil {
			return nil, nil, fmt.Errorf("metric regex: %w", err)
		}
	}
	// The attempt's protocol files, written in place: no process of an
	// earlier attempt is left (Start resumes only ended or lost attempts,
	// after killing what a lost one left), and the trial does not run yet.
	if err := fsx.WriteFile(s.path(paramCfgFile), trialproto.ParameterCfg(sp.ParameterID, s.params), 0o644); err != nil {
		return nil, nil, err
	}
	if err := fsx.WriteFile(s.path(paramsFile), trialproto.ParamsJSON(s.params), 0o644); err != nil {
		return nil, nil, err
	}
	if err := mkdirs(s.path(outputDir), 0o755); err != nil {
		return nil, nil, err
	}
	if sp.TensorBoardDir != "" {
		if err := mkdirs(sp.TensorBoardDir, 0o755); err != nil {
			return nil, nil, fmt.Errorf("tensorboard dir: %w", err)
		}
	}
	req := providers.StartRequest{
		Experiment: sp.Experiment, ExperimentID: sp.ExperimentID, TrialID: sp.TrialID, Seq: sp.Seq, Env: sp.Env,
	}
	env := trialproto.Env(req, s.dir, s.path(outputDir), s.path(paramsFile))
	if sp.TensorBoardDir != "" {
		// TensorBoardDir is ROOT/EXPERIMENT/TRIAL: the experiment's
		// directory is its parent.
		trialproto.SetTensorBoard(env, filepath.Dir(sp.TensorBoardDir), sp.TensorBoardDir)
	}
	py, ok := sp.Env["PYTHONPATH"]
	if !ok {
		py = os.Getenv("PYTHONPATH")
	}
	if sp.LibDir != "" {
		if py != "" {
			py = sp.LibDir + string(os.PathListSeparator) + py
		} else {
			py = sp.LibDir
		}
	}
	if py != "" {
		env["PYTHONPATH"] = py
	}
	if sp.GPUScheduling {
		ids := make([]string, len(sp.AssignedGPUs))
		for i, g := range sp.AssignedGPUs {
			ids[i] = strconv.Itoa(g)
		}
		env["CUDA_VISIBLE_DEVICES"] = strings.Join(ids, ",")
	}

	var cmd *exec.Cmd
	if sp.Shell != "" {
		cmd = exec.Command("/bin/sh", "-c", sp.Shell)
	} else {
		cmd = exec.Command(sp.Args[0], sp.Args[1:]...)
		if cmd.Err != nil {
			return nil, nil, cmd.Err
		}
	}
	if fi, err := os.Stat(sp.CodeDir); err != nil || !fi.IsDir() {
		return nil, nil, fmt.Errorf("code dir %s is not a directory", sp.CodeDir)
	}
	cmd.Dir = sp.CodeDir
	cmd.Env = trialproto.Environ(os.Environ(), env)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}

	out, err := fsx.OpenFile(s.path(stdoutFile), os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, nil, err
	}
	errf, err := fsx.OpenFile(s.path(stderrFile), os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		out.Close()
		return nil, nil, err
	}
	for _, f := range []*os.File{out, errf} {
		if err := endLine(f); err != nil {
			out.Close()
			errf.Close()
			return nil, nil, err
		}
	}
	cmd.Stdout, cmd.Stderr = out, errf
	tl, err := newTailer(s.path(stdoutFile), s.path(stdoutMetrics), re, sp)
	if err != nil {
		out.Close()
		errf.Close()
		return nil, nil, err
	}
	limit := sp.OutputLimit
	if limit == 0 {
		limit = DefaultOutputLimit
	}
	tl.outCap, tl.errCap = newCapper(s.path(stdoutFile), limit), newCapper(s.path(stderrFile), limit)
	// The NNI file of this attempt (archived before it started) is new.
	tl.nni = &nniFollower{path: s.path(nniMetricsFile), stampsPath: s.path(nniStampsPrefix + strconv.Itoa(sp.Attempt))}
	return cmd, tl, nil
}

// endLine ends the unfinished last line an earlier attempt left in an
// output file f (opened to append), so that this attempt's first line does
// not run into it: a secret at its end stays a whole word for masking, a
// metric line stays a line.
func endLine(f *os.File) error {
	fi, err := f.Stat()
	if err != nil || fi.Size() == 0 {
		return err
	}
	last := make([]byte, 1)
	if _, err := f.ReadAt(last, fi.Size()-1); err != nil {
		return err
	}
	if last[0] == '\n' {
		return nil
	}
	_, err = f.Write([]byte{'\n'})
	return err
}

func closeFiles(cmd *exec.Cmd) {
	for _, w := range []io.Writer{cmd.Stdout, cmd.Stderr} {
		if f, ok := w.(*os.File); ok {
			f.Close()
		}
	}
}

// tailer follows the trial's stdout file from where this attempt starts and
// appends the metric records it finds to metrics.stdout.
type tailer struct {
	in       *os.File
	out      *os.File // metrics.stdout, opened at the first record
	outPath  string
	off      int64
	buf      []byte
	chunk    []byte // read buffer, grown up to maxChunk while reads fill it
	skipping bool   // inside an over-long line
	sp       *spec
	col      trialproto.Collector // col.Final: a FINAL was reported on stdout
	err      error
	// The output caps: stdout is trimmed only up to what was scanned.
	outCap, errCap *capper
	periodical     int   // PERIODICAL records written
	dropped        int64 // PERIODICAL records not written, past the cap
	overlongLines  int64 // metric lines longer than maxLine, not read
	// The last final result wins (lastfinal.go): nni follows NNI's file,
	// events counts the tailer's checks, finalAt is the check in which
	// stdout's last final result was seen.
	nni     *nniFollower
	events  int
	finalAt int
	// off0 and metricsFrom are where this attempt starts in stdout and
	// in metrics.stdout (status.StdoutFrom, MetricsFrom).
	off0, metricsFrom int64
}

func newTailer(stdoutPath, metricsPath string, re *regexp.Regexp, sp *spec) (*tailer, error) {
	in, err := fsx.Open(stdoutPath)
	if err != nil {
		return nil, err
	}
	fi, err := in.Stat()
	if err != nil {
		in.Close()
		return nil, err
	}
	var metricsFrom int64
	if mi, err := os.Stat(metricsPath); err == nil {
		metricsFrom = mi.Size()
	}
	return &tailer{in: in, outPath: metricsPath, off: fi.Size(), off0: fi.Size(), metricsFrom: metricsFrom, sp: sp, col: trialproto.Collector{ParameterID: sp.ParameterID, Regex: re}}, nil
}

func (t *tailer) close() {
	t.in.Close()
	if t.out != nil {
		t.out.Close()
	}
	t.nni.close()
}

// follow reads until stop is closed, then drains what is left.
func (t *tailer) follow(stop <-chan struct{}) {
	for {
		n := t.poll()
		t.events++
		t.nni.poll(t.events)
		if n > 0 {
			t.outCap.trim(t.off)
			continue
		}
		if t.errCap != nil {
			if fi, err := os.Stat(t.errCap.path); err == nil {
				t.errCap.trim(fi.Size())
			}
		}
		select {
		case <-stop:
			// Drain what is left, capping as we go: a fast trial may
			// have written all of its output since the last poll.
			for t.poll() > 0 {
				t.outCap.trim(t.off)
			}
			if t.errCap != nil {
				if fi, err := os.Stat(t.errCap.path); err == nil {
					t.errCap.trim(fi.Size())
				}
			}
			if len(t.buf) > 0 && !t.skipping {
				t.line(t.buf)
			}
			t.buf = nil
			return
		case <-time.After(tailInterval):
		}
	}
}

// poll reads what was appended and handles the complete lines.
func (t *tailer) poll() int {
	if t.chunk == nil {
		t.chunk = make([]byte, 4<<10)
	}
	chunk := t.chunk
	n, err := t.in.ReadAt(chunk, t.off)
	if n == len(chunk) && len(chunk) < maxChunk {
		t.chunk = make([]byte, 2*len(chunk))
	}
	if n == 0 {
		if err != nil && !errors.Is(err, io.EOF) && t.err == nil {
			t.err = err
			fmt.Fprintf(os.Stderr, "trialform supervisor: read stdout: %v\n", err)
		}
		return 0
	}
	t.off += int64(n)
	data := chunk[:n]
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			if !t.skipping {
				t.buf = append(t.buf, data...)
				if len(t.buf) > maxLine {
					t.overlong(t.buf)
					t.buf, t.skipping = nil, true
				}
			}
			break
		}
		if !t.skipping {
			t.buf = append(t.buf, data[:i]...)
			if len(t.buf) <= maxLine {
				t.line(t.buf)
			} else {
				t.overlong(t.buf)
			}
		}
		t.buf, t.skipping = t.buf[:0], false
		data = data[i+1:]
	}
	return n
}

func (t *tailer) line(b []byte) {
	m, ok := t.col.Line(string(b))
	if !ok {
		return
	}
	if m.Type == trialproto.TypeFinal && m.Garbage == "" {
		t.finalAt = t.events + 1 // later than the file's of this check
	}
	t.write(m)
}

// overlong reports a metric line longer than maxLine, which is not read.
func (t *tailer) overlong(b []byte) {
	if trialproto.IsMetricLine(b[:min(len(b), 4096)]) {
		t.overlongLines++
		t.write(providers.Metric{ParameterID: t.sp.ParameterID, Garbage: fmt.Sprintf("a metric line longer than %d bytes was not read (%q...)", maxLine, b[:min(len(b), 40)])})
	}
}

func (t *tailer) write(m providers.Metric) {
	if m.Time.IsZero() {
		// Seen now, within tailInterval of the trial printing it: the
		// record keeps the time (a Read comes later, maybe much later).
		m.Time = time.Now()
	}
	if m.Type == trialproto.TypePeriodical && m.Garbage == "" {
		if t.periodical >= providers.MaxIntermediate {
			t.dropped++
			return
		}
		t.periodical++
	}
	if t.out == nil && t.err == nil {
		// Created at the first record: a trial that prints no metric on
		// stdout costs no file.
		t.out, t.err = fsx.OpenFile(t.outPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
		if t.err != nil {
			fmt.Fprintf(os.Stderr, "trialform supervisor: write metrics: %v\n", t.err)
		}
	}
	if t.out == nil {
		return
	}
	if _, err := t.out.Write(trialproto.EncodeMetricRecord(m, t.sp.TrialID)); err != nil && t.err == nil {
		t.err = err
		fmt.Fprintf(os.Stderr, "trialform supervisor: write metrics: %v\n", err)
	}
}

// lastFinalWins copies the NNI file's final result to metrics.stdout when
// it came after stdout's (see lastfinal.go).
func (t *tailer) lastFinalWins() {
	if t.nni == nil {
		return
	}
	t.events++
	t.nni.drain(t.events)
	if t.col.Final && t.nni.final != nil && t.nni.seq > t.finalAt {
		t.write(*t.nni.final)
	}
}

// finish writes the synthetic FINAL of regexp metrics when the trial did
// not report a final result itself. NNI's file is not read whole (it may
// hold hundreds of MB of intermediate results, and a host supervises
// every trial of a run): its follower, drained to the end, saw any final
// result in it.
func (t *tailer) finish(nniMetrics string) error {
	nniFinal := false
	if !t.col.Final {
		f := t.nni
		if f == nil {
			f = &nniFollower{path: nniMetrics}
		}
		f.drain(t.events)
		nniFinal = f.final != nil
	}
	m, ok := t.col.Finish(nniFinal)
	if !ok {
		return nil
	}
	t.write(m)
	return t.err
}
