package ui

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/trialform/trialform/internal/fsx"
	"github.com/trialform/trialform/internal/results"
	"github.com/trialform/trialform/internal/tfevents"
	"github.com/trialform/trialform/schema"
	"github.com/trialform/trialform/state"
)

// experiment looks up the experiment of the request; it has answered
// (404, 503) when it returns nil.
func (s *Server) experiment(w http.ResponseWriter, r *http.Request) (*snapshot, *state.Experiment) {
	sn := s.data.current()
	if sn.err != nil {
		jsonError(w, http.StatusServiceUnavailable, map[string]string{"error": "read state: " + sn.err.Error()})
		return nil, nil
	}
	e := sn.st.Experiments[r.PathValue("exp")]
	if e == nil {
		http.NotFound(w, r)
		return nil, nil
	}
	return sn, e
}

func (s *Server) trial(w http.ResponseWriter, r *http.Request) (*snapshot, *state.Experiment, *state.Trial) {
	sn, e := s.experiment(w, r)
	if e == nil {
		return nil, nil, nil
	}
	t := e.Trials[r.PathValue("id")]
	if t == nil {
		http.NotFound(w, r)
		return nil, nil, nil
	}
	return sn, e, t
}

// config loads the configuration once per state version (it is only used
// for descriptions: tuner names, search spaces, file:line to edit).
func (s *Server) config(sn *snapshot) *schema.Config {
	c, _ := sn.get("config", func() any { return s.o.Config() }).(*schema.Config)
	return c
}

func (s *Server) apiOverview(w http.ResponseWriter, r *http.Request) {
	sn := s.data.current()
	if sn.err != nil {
		jsonError(w, http.StatusServiceUnavailable, map[string]string{"error": "read state: " + sn.err.Error()})
		return
	}
	cfg := s.config(sn)
	out := struct {
		Experiments []ExperimentJSON `json:"experiments"`
		Serial      uint64           `json:"serial"`
		StateDir    string           `json:"state_dir"`
		Backend     BackendJSON      `json:"backend"`
		Controller  *ControllerJSON  `json:"controller,omitempty"`
		Held        []HeldJSON       `json:"held"`
	}{Held: []HeldJSON{}, Experiments: []ExperimentJSON{}, Serial: sn.st.Serial, StateDir: s.o.StateDir, Backend: backendJSON(s.data.b)}
	for _, name := range sortedNames(sn.st.Experiments) {
		e := sn.st.Experiments[name]
		out.Experiments = append(out.Experiments, s.data.summary(sn, e, cfg))
		if e.Hold != nil {
			out.Held = append(out.Held, HeldJSON{Experiment: name, Hold: e.Hold, Approved: e.Pending(), Approval: e.Approval})
		}
	}
	if s.o.Controller != nil {
		c := s.o.Controller()
		out.Controller = &c
	}
	writeJSON(w, out)
}

func sortedNames[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func (s *Server) apiExperiment(w http.ResponseWriter, r *http.Request) {
	sn, e := s.experiment(w, r)
	if e == nil {
		return
	}
	cfg := s.config(sn)
	metrics := map[string]bool{}
	for _, t := range e.Trials {
		for k := range t.Final {
			metrics[k] = true
		}
	}
	writeJSON(w, struct {
		Experiment ExperimentJSON `json:"experiment"`
		Params     []ParamJSON    `json:"params"`
		Metrics    []string       `json:"metrics"`
		Serial     uint64         `json:"serial"`
	}{s.data.summary(sn, e, cfg), s.params(sn, e), sortedNames(metrics), sn.st.Serial})
}

func (s *Server) params(sn *snapshot, e *state.Experiment) []ParamJSON {
	return sn.get("params/"+e.Name, func() any { return paramsOf(e, s.config(sn)) }).([]ParamJSON)
}

func (s *Server) apiTrials(w http.ResponseWriter, r *http.Request) {
	sn, e := s.experiment(w, r)
	if e == nil {
		return
	}
	q, sortBy := r.URL.Query().Get("q"), r.URL.Query().Get("sort")
	v := s.trialsAnswer(sn, e, q, sortBy)
	switch v := v.(type) {
	case *QueryError:
		jsonError(w, http.StatusBadRequest, v)
	case []byte:
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		w.Write(v)
	}
}

// trialsAnswer returns the encoded rows of e matching q in sortBy's order,
// or a *QueryError. The answer is kept per state version and (q, sort):
// the page asks for the same rows for its charts and its table, and the
// watcher prepares the unfiltered one as soon as the state changes.
// Filtered or sorted answers are kept in a bounded cache (the least
// recently asked go first).
func (s *Server) trialsAnswer(sn *snapshot, e *state.Experiment, q, sortBy string) any {
	key := "trials\x00" + e.Name + "\x00" + q + "\x00" + sortBy
	compute := func() any {
		ts, err := s.o.Query.Select(e, q, sortBy, time.Now())
		if err != nil {
			var qe *QueryError
			if !errors.As(err, &qe) {
				qe = &QueryError{Param: "q", Msg: err.Error(), Col: -1}
			}
			return qe
		}
		best := ""
		if b := bestOf(e); b != nil {
			best = b.ID
		}
		rows := make([]RowJSON, len(ts))
		ranks := ranksOf(e)
		for i, t := range ts {
			rows[i] = rowOf(e, t, best, ranks)
		}
		b, err := json.Marshal(struct {
			Total  int       `json:"total"`
			Rows   []RowJSON `json:"rows"`
			Serial uint64    `json:"serial"`
			// Version is this server's number of the state version
			// (the events' version and from).
			Version uint64 `json:"version"`
		}{len(e.Trials), rows, sn.st.Serial, sn.ver})
		if err != nil {
			return &QueryError{Param: "q", Msg: err.Error(), Col: -1}
		}
		return b
	}
	if q == "" && sortBy == "" {
		return sn.get(key, compute)
	}
	return sn.answers.get(key, compute, func(v any) int {
		if b, ok := v.([]byte); ok {
			return len(b) + len(key)
		}
		return 256 + len(key)
	})
}

// warm prepares what pages ask for first after a state change: every
// experiment's unfiltered rows, its parameter importance and the series
// of its "all trials" curves.
func (s *Server) warm(sn *snapshot) {
	if sn.err != nil {
		return
	}
	for _, name := range sortedNames(sn.st.Experiments) {
		e := sn.st.Experiments[name]
		s.trialsAnswer(sn, e, "", "")
		s.data.importanceOf(e, s.params(sn, e))
		best := ""
		if b := bestOf(e); b != nil {
			best = b.ID
		}
		ts, _ := allCurves(e, best)
		for _, t := range ts {
			s.data.series(e, t)
		}
	}
}

// CurveJSON is one trial's intermediate series.
type CurveJSON struct {
	ID     string `json:"id"`
	Seq    int    `json:"seq"`
	Status string `json:"status"`
	Best   bool   `json:"best,omitempty"`
	// Points are [step, value]; [step, value, attempt] when the curve
	// holds several attempts (a resumed trial numbers its steps from 0
	// again).
	Points [][]float64 `json:"points"`
}

// maxCurvePoints bounds the points of one curves answer: beyond it each
// curve is thinned evenly (keeping its last point).
const maxCurvePoints = 40_000

func (s *Server) apiCurves(w http.ResponseWriter, r *http.Request) {
	sn, e := s.experiment(w, r)
	if e == nil {
		return
	}
	// The selected trials, each once, in sequence order; at most
	// maxAllCurves of them (the first ones, and "sampled" says so).
	var ts []*state.Trial
	if ids := r.URL.Query().Get("trials"); ids != "" {
		seen := map[string]bool{}
		for _, id := range strings.Split(ids, ",") {
			if t := e.Trials[id]; t != nil && !seen[id] {
				seen[id] = true
				ts = append(ts, t)
			}
		}
		sort.Slice(ts, func(i, j int) bool { return ts[i].Seq < ts[j].Seq })
	}
	best := ""
	if b := bestOf(e); b != nil {
		best = b.ID
	}
	shown, of := 0, 0
	if len(ts) > maxAllCurves {
		shown, of = maxAllCurves, len(ts)
		ts = ts[:maxAllCurves]
	}
	if ts == nil {
		ts, of = allCurves(e, best)
		shown = len(ts)
	}
	series := make([][]point, len(ts))
	total := 0
	var wg sync.WaitGroup
	sem := make(chan struct{}, 4)
	for i, t := range ts {
		if t.Intermediate == 0 {
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			series[i] = s.data.series(e, t)
			<-sem
		}()
	}
	wg.Wait()
	for _, p := range series {
		total += len(p)
	}
	per := 0
	if total > maxCurvePoints {
		per = max(10, maxCurvePoints/max(1, len(ts)))
	}
	out := []CurveJSON{}
	for i, t := range ts {
		pts := series[i]
		if len(pts) == 0 {
			continue
		}
		c := CurveJSON{ID: t.ID, Seq: t.Seq, Status: t.Status, Best: t.ID == best}
		step := 1.0
		if per > 0 && len(pts) > per {
			step = float64(len(pts)) / float64(per)
		}
		attempts := pts[0].Attempt != pts[len(pts)-1].Attempt
		at := func(p point) []float64 {
			if attempts {
				return []float64{float64(p.Seq), p.Value, float64(p.Attempt)}
			}
			return []float64{float64(p.Seq), p.Value}
		}
		k := 0
		for f := 0.0; int(f) < len(pts); f += step {
			k = int(f)
			c.Points = append(c.Points, at(pts[k]))
		}
		if k != len(pts)-1 {
			c.Points = append(c.Points, at(pts[len(pts)-1]))
		}
		out = append(out, c)
	}
	writeJSON(w, struct {
		Metric  string      `json:"metric"`
		Goal    string      `json:"goal"`
		Thinned bool        `json:"thinned"`
		Curves  []CurveJSON `json:"curves"`
		Sampled []int       `json:"sampled,omitempty"` // [shown, of] when "all" shows a sample
		Serial  uint64      `json:"serial"`
	}{e.Metric, e.Goal, per > 0, out, sampled(shown, of), sn.st.Serial})
}

func sampled(shown, of int) []int {
	if shown < of {
		return []int{shown, of}
	}
	return nil
}

// maxAllCurves bounds the curves of the "all trials" view: beyond it the
// view shows the best, every early-stopped trial and an even sample of the
// others (a user selects trials to see any other).
const maxAllCurves = 300

// allCurves returns the trials with intermediate values for the "all"
// view, and how many there are.
func allCurves(e *state.Experiment, best string) ([]*state.Trial, int) {
	var with []*state.Trial
	for _, t := range e.SortedTrials() {
		if t.Intermediate > 0 {
			with = append(with, t)
		}
	}
	if len(with) <= maxAllCurves {
		return with, len(with)
	}
	keep := map[string]bool{}
	var out []*state.Trial
	add := func(t *state.Trial) {
		if !keep[t.ID] && len(out) < maxAllCurves {
			keep[t.ID] = true
			out = append(out, t)
		}
	}
	if t := e.Trials[best]; t != nil && t.Intermediate > 0 {
		add(t)
	}
	for _, t := range with {
		if t.Status == state.EarlyStopped && len(out) < maxAllCurves/2 {
			add(t)
		}
	}
	step := float64(len(with)) / float64(maxAllCurves-len(out))
	for k := 0.0; int(k) < len(with) && len(out) < maxAllCurves; k += step {
		add(with[int(k)])
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Seq < out[j].Seq })
	return out, len(with)
}

func (s *Server) apiImportance(w http.ResponseWriter, r *http.Request) {
	sn, e := s.experiment(w, r)
	if e == nil {
		return
	}
	writeJSON(w, s.data.importanceOf(e, s.params(sn, e)))
}

// TrialJSON is the trial page's data.
type TrialJSON struct {
	RowJSON
	Experiment string            `json:"experiment"`
	Platform   string            `json:"platform"`
	Handle     map[string]string `json:"handle"`
	ExitCode   *int              `json:"exit_code,omitempty"`
	Command    string            `json:"command"`
	CommandErr string            `json:"command_error,omitempty"`
	Points     []point           `json:"points"`
	Goal       string            `json:"goal"`
	Metric     string            `json:"metric"`
	// Provenance is what the trial was created from (git commits, the
	// trialform version); absent when its state recorded none.
	Provenance *state.Provenance `json:"provenance,omitempty"`
}

func (s *Server) apiTrial(w http.ResponseWriter, r *http.Request) {
	sn, e, t := s.trial(w, r)
	if t == nil {
		return
	}
	best := ""
	if b := bestOf(e); b != nil {
		best = b.ID
	}
	j := TrialJSON{
		RowJSON: rowOf(e, t, best, ranksOf(e)), Experiment: e.Name, Platform: e.Platform, Handle: t.Handle,
		ExitCode: t.ExitCode, Points: s.data.series(e, t), Goal: e.Goal, Metric: e.Metric,
		Provenance: t.Provenance,
	}
	if j.Points == nil {
		j.Points = []point{}
	}
	if j.Handle == nil {
		j.Handle = map[string]string{}
	}
	j.Command, j.CommandErr = commandLine(s.config(sn), e, t)
	writeJSON(w, j)
}

// commandLine renders the trial's command as the current configuration
// would run it with the trial's params.
func commandLine(cfg *schema.Config, e *state.Experiment, t *state.Trial) (string, string) {
	if cfg == nil {
		return "", "the configuration does not load (run trialform validate)"
	}
	ce := cfg.Experiments[e.Name]
	if ce == nil {
		return "", "the experiment is no longer in the configuration"
	}
	cmd, err := ce.Trial.Command.Render(t.Params, true)
	if err != nil {
		return "", err.Error()
	}
	for _, a := range ce.Trial.Args {
		v, err := a.Render(t.Params, false)
		if err != nil {
			return "", err.Error()
		}
		cmd += " " + schema.ShellQuote(v)
	}
	if t.Generation != e.Generation {
		return cmd, fmt.Sprintf("rendered with the current definition (generation %d); this trial ran in generation %d", e.Generation, t.Generation)
	}
	return cmd, ""
}

// logTail bounds what a log stream sends of the output that exists when
// it starts.
const logTail = 256 << 10

// apiLogs streams a trial's output as server-sent events: "log" events
// (data: a JSON string) with the last 256 KiB of what exists, then what
// is appended while the trial runs, then an "end" event.
func (s *Server) apiLogs(w http.ResponseWriter, r *http.Request) {
	_, e, t := s.trial(w, r)
	if t == nil {
		return
	}
	fl, ok := w.(http.Flusher)
	if !ok || s.o.Logs == nil {
		http.Error(w, "logs are not available", http.StatusNotImplemented)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	stream(w)
	lw := newLogWriter(w, fl)
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- s.o.Logs(ctx, e, t, !state.Terminal(t.Status), lw) }()
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			lw.flush()
			msg := ""
			if err != nil && ctx.Err() == nil {
				msg = err.Error()
			}
			writeEvent(w, "end", msg)
			fl.Flush()
			return
		case <-tick.C:
			lw.flush()
		case <-r.Context().Done():
			return
		}
	}
}

// logWriter collects output and sends it at each flush, keeping only the
// last logTail bytes of what piled up in between (the first flush carries
// the existing output: its tail is what a user wants).
type logWriter struct {
	mu  sync.Mutex
	buf []byte
	cut bool
	w   http.ResponseWriter
	fl  http.Flusher
}

func newLogWriter(w http.ResponseWriter, fl http.Flusher) *logWriter {
	return &logWriter{w: w, fl: fl}
}

func (l *logWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf, p...)
	if len(l.buf) > 2*logTail {
		l.buf = append(l.buf[:0], l.buf[len(l.buf)-logTail:]...)
		l.cut = true
	}
	return len(p), nil
}

func (l *logWriter) flush() {
	l.mu.Lock()
	b, cut := l.buf, l.cut
	l.buf, l.cut = nil, false
	l.mu.Unlock()
	if len(b) > logTail {
		b, cut = b[len(b)-logTail:], true
	}
	if cut {
		if i := bytes.IndexByte(b, '\n'); i >= 0 && i < 4096 {
			b = b[i+1:]
		}
		writeEvent(l.w, "cut", "")
	}
	if len(b) > 0 {
		writeEvent(l.w, "log", string(b))
	}
	l.fl.Flush()
}

// writeEvent writes one server-sent event whose data is s as a JSON
// string (so newlines and any byte are safe).
func writeEvent(w http.ResponseWriter, name, s string) {
	b, _ := jsonString(s)
	fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, b)
}

// ScalarsJSON is a trial's TensorBoard scalars.
type ScalarsJSON struct {
	Files  []string                     `json:"files"` // relative to the trial directory
	Tags   map[string][]tfevents.Scalar `json:"tags"`
	Errors []string                     `json:"errors,omitempty"`
	Dirs   []string                     `json:"dirs"`
}

func (s *Server) trialDirs(e *state.Experiment, t *state.Trial) []string {
	if s.o.TrialDirs != nil {
		return s.o.TrialDirs(e, t)
	}
	// The TensorBoard tree (TRIALFORM_TENSORBOARD_DIR of local trials;
	// where `trialform tensorboard` syncs remote ones), then a local
	// trial's own directory (output/tensorboard by default).
	dirs := []string{filepath.Join(s.o.StateDir, "tensorboard", e.Name, t.ID)}
	if strings.HasPrefix(e.Platform, "local.") {
		// (named as the platform knows the experiment: after `state mv`
		// its trials keep the old name)
		dirs = append(dirs, filepath.Join(s.o.StateDir, "trials", e.OnPlatform(), t.ID))
	}
	return dirs
}

// apiScalars reads the event files (events.out.tfevents.*) under the
// trial's directories. It follows no symbolic link and reads only regular
// files, so a trial cannot make it read files elsewhere.
func (s *Server) apiScalars(w http.ResponseWriter, r *http.Request) {
	_, e, t := s.trial(w, r)
	if t == nil {
		return
	}
	out := ScalarsJSON{Files: []string{}, Tags: map[string][]tfevents.Scalar{}, Dirs: []string{}}
	for _, dir := range s.trialDirs(e, t) {
		out.Dirs = append(out.Dirs, dir)
		if fi, err := os.Lstat(dir); err != nil || !fi.IsDir() {
			continue // absent, or a symbolic link: never followed
		}
		var files []string
		filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err == nil && d.Type().IsRegular() && strings.Contains(d.Name(), "tfevents") {
				files = append(files, path)
			}
			return nil
		})
		// Runs are named as TensorBoard names them: by their directory
		// relative to the shallowest one holding event files.
		base := ""
		for _, f := range files {
			if d := filepath.Dir(f); base == "" || len(d) < len(base) {
				base = d
			}
		}
		for _, path := range files {
			f, err := fsx.Open(path) // never blocks: a trial may put a FIFO there
			if err != nil {
				continue
			}
			tags, err := tfevents.ReadScalars(f)
			f.Close()
			rel, _ := filepath.Rel(dir, path)
			if err != nil {
				out.Errors = append(out.Errors, rel+": "+err.Error())
			}
			out.Files = append(out.Files, rel)
			prefix := ""
			if sub, _ := filepath.Rel(base, filepath.Dir(path)); sub != "." && sub != "" {
				prefix = filepath.ToSlash(sub) + "/"
			}
			for tag, pts := range tags {
				out.Tags[prefix+tag] = append(out.Tags[prefix+tag], pts...)
			}
		}
	}
	writeJSON(w, out)
}

func (s *Server) apiPlan(w http.ResponseWriter, r *http.Request) {
	if s.o.Plan == nil {
		writeJSON(w, map[string]string{"error": "this server was started without a plan function"})
		return
	}
	sn := s.data.current()
	v := sn.get("plan", func() any {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), 60*time.Second)
		defer cancel()
		txt, err := s.o.Plan(ctx)
		m := map[string]string{"text": txt}
		if err != nil {
			m["error"] = err.Error()
		}
		return m
	})
	writeJSON(w, v)
}

// CommitJSON is one commit touching the HCL files.
type CommitJSON struct {
	Hash        string           `json:"hash"`
	Author      string           `json:"author"`
	Date        time.Time        `json:"date"`
	Subject     string           `json:"subject"`
	Files       []string         `json:"files"`
	Generations []GenerationJSON `json:"generations"` // generations that started after it (and before the next)
}

// GenerationJSON is when an experiment's generation started.
type GenerationJSON struct {
	Experiment string    `json:"experiment"`
	Generation int       `json:"generation"`
	Started    time.Time `json:"started"`
}

func (s *Server) apiHistory(w http.ResponseWriter, r *http.Request) {
	sn := s.data.current()
	if sn.err != nil {
		jsonError(w, http.StatusServiceUnavailable, map[string]string{"error": sn.err.Error()})
		return
	}
	v := sn.get("history", func() any { return history(r.Context(), s.o.WorkDir, sn.st) })
	writeJSON(w, v)
}

func history(ctx context.Context, dir string, st *state.State) any {
	// Generations: the first trial of each.
	var gens []GenerationJSON
	for _, e := range st.Experiments {
		first := map[int]time.Time{}
		for _, t := range e.Trials {
			if f, ok := first[t.Generation]; !ok || t.CreatedAt.Before(f) {
				first[t.Generation] = t.CreatedAt
			}
		}
		for g, at := range first {
			gens = append(gens, GenerationJSON{Experiment: e.Name, Generation: g, Started: at})
		}
	}
	sort.Slice(gens, func(i, j int) bool { return gens[i].Started.Before(gens[j].Started) })
	out := struct {
		Commits     []CommitJSON     `json:"commits"`
		Generations []GenerationJSON `json:"generations"`
		Error       string           `json:"error,omitempty"`
	}{Commits: []CommitJSON{}, Generations: gens}
	if gens == nil {
		out.Generations = []GenerationJSON{}
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "git", "-C", dir, "log", "-n", "200", "--format=%x1e%H%x1f%an%x1f%aI%x1f%s", "--name-only", "--", "*.hcl", "*.tfvars", "*.hcl.json")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	b, err := cmd.Output()
	if err != nil {
		out.Error = historyError(dir, stderr.String(), err)
		return out
	}
	for _, rec := range strings.Split(string(b), "\x1e") {
		head, files, _ := strings.Cut(rec, "\n")
		f := strings.Split(head, "\x1f")
		if len(f) != 4 {
			continue
		}
		c := CommitJSON{Hash: f[0], Author: f[1], Subject: f[3], Files: []string{}, Generations: []GenerationJSON{}}
		c.Date, _ = time.Parse(time.RFC3339, f[2])
		for _, fl := range strings.Split(files, "\n") {
			if fl = strings.TrimSpace(fl); fl != "" {
				c.Files = append(c.Files, fl)
			}
		}
		out.Commits = append(out.Commits, c)
	}
	// Commits are newest first: a generation belongs to the newest commit
	// before it started.
	for _, g := range gens {
		for i := range out.Commits {
			if !out.Commits[i].Date.After(g.Started) {
				out.Commits[i].Generations = append(out.Commits[i].Generations, g)
				break
			}
		}
	}
	return out
}

// historyError says in plain words why there is no history: git's own
// "fatal: ..." means nothing to a user who never asked for git.
func historyError(dir, stderr string, err error) string {
	switch {
	case errors.Is(err, exec.ErrNotFound):
		return "git is not installed, so the history of the definitions cannot be shown."
	case strings.Contains(stderr, "not a git repository"):
		return dir + " is not a git repository, so there is no history of the definitions to show. Commit the HCL files with git to see here which change started each generation."
	}
	msg := strings.TrimSpace(firstLine(stderr, err.Error()))
	msg = strings.TrimPrefix(strings.TrimPrefix(msg, "fatal: "), "error: ")
	return "git log could not read the history of " + dir + ": " + msg
}

func firstLine(s, def string) string {
	s = strings.TrimSpace(s)
	if s == "" {
		return def
	}
	l, _, _ := strings.Cut(s, "\n")
	return l
}

// CompareJSON is one experiment's best-so-far series.
type CompareJSON struct {
	Name   string       `json:"name"`
	Goal   string       `json:"goal"`
	Metric string       `json:"metric"`
	Points [][2]float64 `json:"points"` // [trials finished, best so far]
}

func (s *Server) apiCompare(w http.ResponseWriter, r *http.Request) {
	sn := s.data.current()
	if sn.err != nil {
		jsonError(w, http.StatusServiceUnavailable, map[string]string{"error": sn.err.Error()})
		return
	}
	names := r.URL.Query()["exp"]
	if len(names) == 0 {
		names = sortedNames(sn.st.Experiments)
	}
	out := []CompareJSON{}
	for _, n := range names {
		e := sn.st.Experiments[n]
		if e == nil {
			http.NotFound(w, r)
			return
		}
		c := CompareJSON{Name: e.Name, Goal: e.Goal, Metric: e.Metric, Points: [][2]float64{}}
		var done []*state.Trial
		vals := map[string]float64{}
		for _, t := range e.Trials {
			if v, ok := objectiveNow(e, t); ok {
				done = append(done, t)
				vals[t.ID] = v
			}
		}
		sort.Slice(done, func(i, j int) bool { return endOrder(done[i], done[j]) })
		for i, t := range done {
			v := vals[t.ID]
			if i > 0 && !state.Better(e.Goal, v, c.Points[i-1][1]) {
				v = c.Points[i-1][1]
			}
			c.Points = append(c.Points, [2]float64{float64(i + 1), v})
		}
		out = append(out, c)
	}
	writeJSON(w, map[string]any{"experiments": out, "serial": sn.st.Serial})
}

// objectiveNow is a succeeded trial's value of the experiment's (first)
// objective as it is now, as `trials` takes it (results.ObjectiveValue):
// an earlier generation's Value is its own first objective's, which may
// have been another metric or strategy (objectives reordered or renamed,
// strategy changed).
func objectiveNow(e *state.Experiment, t *state.Trial) (float64, bool) {
	if t.Status != state.Succeeded {
		return 0, false
	}
	v := results.ObjectiveValue(e, t)
	if v == nil || math.IsNaN(*v) || math.IsInf(*v, 0) {
		return 0, false
	}
	return *v, true
}

func endOrder(a, b *state.Trial) bool {
	if a.EndedAt != nil && b.EndedAt != nil && !a.EndedAt.Equal(*b.EndedAt) {
		return a.EndedAt.Before(*b.EndedAt)
	}
	return a.Seq < b.Seq
}

// BackendJSON names where the state lives and who holds its locks now.
type BackendJSON struct {
	Kind     string     `json:"kind"`
	Location string     `json:"location"`
	Locks    []LockJSON `json:"locks"`
	// LocksError says why the locks could not be read ("" when they
	// could).
	LocksError string `json:"locks_error,omitempty"`
}

// LockJSON is one lock held: its holder, and its experiments (none: the
// whole state).
type LockJSON struct {
	ID          string    `json:"id"`
	Operation   string    `json:"operation"`
	Who         string    `json:"who"`
	PID         int       `json:"pid"`
	Since       time.Time `json:"since"`
	Experiments []string  `json:"experiments,omitempty"`
}

func backendJSON(b state.Backend) BackendJSON {
	out := BackendJSON{Kind: b.Name(), Location: b.Location(), Locks: []LockJSON{}}
	locks, err := state.CurrentLocksOf(b)
	if err != nil {
		out.LocksError = err.Error()
	}
	for _, l := range locks {
		out.Locks = append(out.Locks, LockJSON{ID: l.ID, Operation: l.Operation, Who: l.Who, PID: l.PID, Since: l.Created, Experiments: l.Experiments})
	}
	return out
}

// HeldJSON is a change the controller holds (state.Hold), with its
// approval.
type HeldJSON struct {
	Experiment string          `json:"experiment"`
	Hold       *state.Hold     `json:"hold"`
	Approved   bool            `json:"approved"`
	Approval   *state.Approval `json:"approval,omitempty"`
}

// ControllerJSON is the controller's sync status.
type ControllerJSON struct {
	// Commit is the commit whose definitions are in force.
	Commit string `json:"commit,omitempty"`
	// SyncError is the last failed sync, nil once a later one succeeded.
	SyncError *SyncErrorJSON `json:"sync_error,omitempty"`
}

// SyncErrorJSON is one failed sync of the controller.
type SyncErrorJSON struct {
	Stage   string    `json:"stage"` // git, definitions, lock, plan, apply
	Commit  string    `json:"commit,omitempty"`
	Message string    `json:"message"`
	At      time.Time `json:"at"`
}
