package cloudjob

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/trialform/trialform/internal/fsx"
	"github.com/trialform/trialform/internal/mask"
	"github.com/trialform/trialform/internal/netretry"
	"github.com/trialform/trialform/providers"
	"github.com/trialform/trialform/providers/trialproto"
)

// Tag keys Start puts on every job.
const (
	TagManaged      = "trialform"
	TagExperiment   = "trialform-experiment"
	TagTrial        = "trialform-trial"
	TagJob          = "trialform-job"
	TagLineage      = "trialform-lineage"
	TagExperimentID = "trialform-experiment-id"
	TagGeneration   = "trialform-generation"
)

// Provider is the providers.Provider New builds over one API.
type Provider struct {
	api  API
	opts Options
	fs   layout

	mu    sync.Mutex
	locks map[string]*sync.Mutex
	// secrets is Options.Secrets as a mask (see scrub).
	secrets *mask.Set
}

// New returns the provider running trials as jobs of api: a *Provider
// (also a Lister, Importer, ExperimentPurger, LogStreamer, Locator and
// ReadParallelism), or, when api is a SpecRenderer, a *SpecProvider, which
// is a SpecDiffer too. A provider whose API cannot render specs is no
// SpecDiffer, so nothing takes its empty renderings for a spec.
func New(api API, opts Options) providers.Provider {
	p := newProvider(api, opts)
	if sr, ok := api.(SpecRenderer); ok {
		return &SpecProvider{Provider: p, sr: sr}
	}
	return p
}

func newProvider(api API, opts Options) *Provider {
	if opts.NNIPlatform == "" {
		opts.NNIPlatform = opts.Kind
	}
	if opts.ContainerMount == "" {
		opts.ContainerMount = opts.LocalMount
	}
	if opts.Poll <= 0 {
		opts.Poll = 2 * time.Second
	}
	if opts.StopWait <= 0 {
		opts.StopWait = 2 * time.Minute
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Provider{api: api, opts: opts, fs: layout{local: opts.LocalMount, container: opts.ContainerMount}, locks: map[string]*sync.Mutex{}, secrets: mask.New(opts.Secrets...)}
}

var (
	_ providers.Provider         = (*Provider)(nil)
	_ providers.Lister           = (*Provider)(nil)
	_ providers.Importer         = (*Provider)(nil)
	_ providers.ExperimentPurger = (*Provider)(nil)
	_ providers.LogStreamer      = (*Provider)(nil)
	_ providers.Locator          = (*Provider)(nil)
	_ providers.ReadParallelism  = (*Provider)(nil)
)

// Kind is the platform kind.
func (p *Provider) Kind() string { return p.opts.Kind }

// Close releases nothing: the API's client holds no connection state.
func (p *Provider) Close() error { return nil }

// ReadParallelism: Reads wait on the service.
func (p *Provider) ReadParallelism() int {
	if p.opts.ReadParallelism > 0 {
		return p.opts.ReadParallelism
	}
	return 8
}

// Location is the job id (or what Options.Location says).
func (p *Provider) Location(h providers.Handle) string {
	if p.opts.Location != nil {
		return p.opts.Location(h)
	}
	if h["job"] == "" {
		return ""
	}
	return p.opts.Kind + " job " + h["job"]
}

// Validate checks the shared mount is a writable directory, then runs
// Options.Validate.
func (p *Provider) Validate(ctx context.Context) error {
	if p.opts.LocalMount == "" {
		return providers.Permanent(fmt.Errorf("platform %q %q: no shared storage mount set: trials reach their code through it", p.opts.Kind, p.opts.Name))
	}
	st, err := os.Stat(p.opts.LocalMount)
	if err != nil || !st.IsDir() {
		return providers.Permanent(fmt.Errorf("platform %q %q: the shared storage mount %s is not a directory on this machine: mount it there (NFS, NAS) or fix the path", p.opts.Kind, p.opts.Name, p.opts.LocalMount))
	}
	if err := os.MkdirAll(p.fs.root(), 0o755); err != nil {
		return providers.Permanent(fmt.Errorf("platform %q %q: cannot write to the shared storage mount: %w", p.opts.Kind, p.opts.Name, err))
	}
	if p.opts.Validate != nil {
		return p.scrub(p.opts.Validate(ctx))
	}
	return nil
}

// lock serialises Start, Stop and Import of one trial in this process.
func (p *Provider) lock(exp, trial string) func() {
	k := exp + "/" + trial
	p.mu.Lock()
	m := p.locks[k]
	if m == nil {
		m = &sync.Mutex{}
		p.locks[k] = m
	}
	p.mu.Unlock()
	m.Lock()
	return m.Unlock
}

// call runs one API call under the retry policy.
func (p *Provider) call(ctx context.Context, f func(ctx context.Context) error) error {
	return p.opts.Retry.Do(ctx, Classify, f)
}

// scrub hides Options.Secrets in err's message, in every encoding a
// request could carry them (internal/mask: URL query and path encoding,
// JSON escaping, base64), since a service may echo the request in an error.
func (p *Provider) scrub(err error) error {
	return p.secrets.Error(err)
}

// scrubObs hides Options.Secrets in what the service said about a job.
func (p *Provider) scrubObs(o providers.Observation) providers.Observation {
	o.Reason, o.Note = p.secrets.Scrub(o.Reason), p.secrets.Scrub(o.Note)
	return o
}

func (p *Provider) handle(r *record) providers.Handle {
	a := r.last()
	if a == nil {
		return providers.Handle{"trial": r.TrialID}
	}
	return providers.Handle{"job": a.ID, "name": a.Name, "attempt": strconv.Itoa(len(r.Attempts))}
}

func tags(r *record, name string) map[string]string {
	t := map[string]string{
		TagManaged: "1", TagExperiment: r.Experiment, TagTrial: r.TrialID, TagJob: name,
		TagLineage: r.Owner.Lineage, TagExperimentID: r.Owner.ExperimentID,
	}
	if r.Owner.Generation > 0 {
		t[TagGeneration] = strconv.Itoa(r.Owner.Generation)
	}
	return t
}

// Start creates or adopts the trial's job (see providers.Provider).
func (p *Provider) Start(ctx context.Context, req providers.StartRequest) (providers.Handle, error) {
	h, err := p.start(ctx, req)
	return h, p.scrub(err)
}

func (p *Provider) start(ctx context.Context, req providers.StartRequest) (providers.Handle, error) {
	if err := checkNames(req.Experiment, req.TrialID); err != nil {
		return nil, err
	}
	if err := req.Validate(); err != nil {
		return nil, err
	}
	defer p.lock(req.Experiment, req.TrialID)()
	r, err := p.fs.readRecord(req.Experiment, req.TrialID)
	if err != nil {
		return nil, err
	}
	what := fmt.Sprintf("platform %s %q", p.opts.Kind, p.opts.Name)
	if r != nil {
		if err := providers.CheckOwner(what, req, r.Owner); err != nil {
			return nil, err
		}
		if a := r.last(); a != nil {
			j, err := p.job(ctx, r, a)
			switch {
			case err == nil && (!j.Phase.Ended() || !req.Resume):
				return p.handle(r), nil // running, or ended and not resumed: adopt
			case err == nil: // ended, resumed: a new attempt
			case !errors.Is(err, providers.ErrNotFound):
				return nil, err
			case a.ID == "" && !a.Submitted.IsZero():
				// Recorded but never answered: submit it again under the same name.
				return p.submit(ctx, req, r, true)
			}
		}
	} else {
		r = &record{Version: 1, Experiment: req.Experiment, TrialID: req.TrialID, Nonce: randHex(4), Owner: req.Owner(),
			Seq: req.Seq, ParameterID: req.ParameterID, Params: req.Params, MaxDuration: req.MaxDuration, MetricRegex: req.MetricRegex}
		if err := p.fs.writeRecord(r, true); err != nil {
			if errors.Is(err, os.ErrExist) {
				return nil, providers.Permanent(fmt.Errorf("%s: trial %s/%s was created on the shared storage by another trialform at the same moment; run again", what, req.Experiment, req.TrialID))
			}
			return nil, err
		}
	}
	return p.submit(ctx, req, r, false)
}

// submit writes the trial's files and submits its next attempt (again, the
// last one, when resubmit).
func (p *Provider) submit(ctx context.Context, req providers.StartRequest, r *record, resubmit bool) (providers.Handle, error) {
	spec, err := p.jobSpec(req, false)
	if err != nil {
		return nil, err
	}
	dir := p.fs.trialDir(req.Experiment, req.TrialID)
	for _, f := range []struct {
		name string
		data []byte
	}{{"parameter.cfg", trialproto.ParameterCfg(r.ParameterID, r.Params)}, {"params.json", trialproto.ParamsJSON(r.Params)}} {
		if err := fsx.WriteFileAtomic(filepath.Join(dir, f.name), f.data, 0o644); err != nil {
			return nil, err
		}
	}
	if err := os.MkdirAll(filepath.Join(dir, "output"), 0o755); err != nil {
		return nil, err
	}
	if !resubmit {
		// The exit status file of the attempt before.
		if err := os.Remove(p.fs.exitPath(r.Experiment, r.TrialID)); err != nil && !os.IsNotExist(err) {
			return nil, err
		}
		r.Attempts = append(r.Attempts, attempt{Name: jobName(r, len(r.Attempts)+1), Submitted: p.opts.Now().UTC()})
		if err := p.fs.writeRecord(r, false); err != nil {
			return nil, err
		}
	}
	a := r.last()
	spec.Name = a.Name
	spec.Tags = tags(r, a.Name)
	var id string
	err = p.call(ctx, func(ctx context.Context) error {
		var err error
		id, err = p.api.Submit(ctx, spec)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("submit job %s: %w", a.Name, err)
	}
	a.ID = id
	if err := p.fs.writeRecord(r, false); err != nil {
		return nil, err
	}
	return p.handle(r), nil
}

// teeCommand makes command copy its output into log (appending: every
// attempt of the trial writes the same log), keeping its exit status
// (written to rc, as without the tee).
func teeCommand(command, log, rc string) string {
	return fmt.Sprintf("{ ( %s\n) ; echo $? > %s; } 2>&1 | tee -a %s; exit \"$(cat %s 2>/dev/null || echo 1)\"", command, shq(rc), shq(log), shq(rc))
}

func shq(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// jobSpec is what Start submits for req, name and tags aside.
// With dry it computes the same spec without writing to the mount.
func (p *Provider) jobSpec(req providers.StartRequest, dry bool) (JobSpec, error) {
	if req.CodeDir == "" {
		return JobSpec{}, providers.Permanent(errors.New("no code dir"))
	}
	code, err := p.fs.shipCode(req.CodeDir, dry)
	if err != nil {
		return JobSpec{}, fmt.Errorf("copy the code dir to the shared storage: %w", err)
	}
	dir := p.fs.trialDir(req.Experiment, req.TrialID)
	in := p.fs.inContainer
	env := trialproto.Env(req, in(dir), in(filepath.Join(dir, "output")), in(filepath.Join(dir, "params.json")))
	env[trialproto.EnvPlatform] = p.opts.NNIPlatform
	// The Python helpers (trialform.py, NNI's trial API) go first on
	// PYTHONPATH, as on kubernetes, so unmodified NNI trials run on any
	// image.
	lib := filepath.Join(p.fs.root(), "lib")
	if !dry {
		if err := trialproto.InstallPython(lib); err != nil {
			return JobSpec{}, err
		}
	}
	py := in(lib)
	if u := req.Env["PYTHONPATH"]; u != "" {
		py += ":" + u
	}
	env["PYTHONPATH"] = py
	command := req.Shell
	if command == "" {
		q := make([]string, len(req.Args))
		for i, a := range req.Args {
			q[i] = shq(a)
		}
		command = strings.Join(q, " ")
	}
	rc := in(p.fs.exitPath(req.Experiment, req.TrialID))
	if p.opts.LogsOnMount {
		command = teeCommand(command, in(p.fs.logPath(req.Experiment, req.TrialID)), rc)
	} else {
		command = fmt.Sprintf("( %s\n) ; rc=$?; echo $rc > %s; exit $rc", command, shq(rc))
	}
	return JobSpec{Command: command, Env: env, WorkDir: in(code), GPUs: req.GPUs, Extra: p.opts.Extra}, nil
}

// NoTensorBoardSync is why the cloud job platforms are no
// providers.TensorBoardSyncer: trials write their TensorBoard logs to the
// shared storage this machine mounts, where they are read in place.
const NoTensorBoardSync = "trials write their TensorBoard logs to the shared storage this machine mounts"

// SpecProvider is the Provider of an API that renders specs: a
// providers.SpecDiffer.
type SpecProvider struct {
	*Provider
	sr SpecRenderer
}

var _ providers.SpecDiffer = (*SpecProvider)(nil)

// Spec renders what Start would submit for req.
func (p *SpecProvider) Spec(req providers.StartRequest) (string, error) {
	spec, err := p.jobSpec(req, true)
	if err != nil {
		return "", err
	}
	return p.sr.RenderSpec(spec)
}

// job finds the attempt's job: by id, or by its name's tag when Submit
// never answered.
func (p *Provider) job(ctx context.Context, r *record, a *attempt) (Job, error) {
	var j Job
	if a.ID != "" {
		err := p.call(ctx, func(ctx context.Context) error {
			var err error
			j, err = p.api.Get(ctx, a.ID)
			return err
		})
		return j, err
	}
	var jobs []Job
	err := p.call(ctx, func(ctx context.Context) error {
		var err error
		jobs, err = p.api.List(ctx, map[string]string{TagJob: a.Name})
		return err
	})
	if err != nil {
		return j, err
	}
	for _, c := range jobs {
		if c.Name == a.Name || c.Tags[TagJob] == a.Name {
			a.ID = c.ID
			if r != nil {
				_ = p.fs.writeRecord(r, false)
			}
			return c, nil
		}
	}
	return j, fmt.Errorf("job %s: %w", a.Name, providers.ErrNotFound)
}

// Read observes the trial's latest job and collects its metrics.
func (p *Provider) Read(ctx context.Context, req providers.ReadRequest) (providers.Observation, error) {
	o, err := p.read(ctx, req.Experiment, req.TrialID, req.MetricsOffset, true)
	return p.scrubObs(o), p.scrub(err)
}

func (p *Provider) read(ctx context.Context, exp, trial string, off map[string]int64, metrics bool) (providers.Observation, error) {
	o := providers.Observation{TrialID: trial, Experiment: exp}
	if checkNames(exp, trial) != nil {
		return o, nil
	}
	r, err := p.fs.readRecord(exp, trial)
	if err != nil || r == nil {
		return o, err
	}
	o.Exists = true
	o.Handle = p.handle(r)
	o.Lineage = r.Owner.Lineage
	o.Owner = r.Owner
	a := r.last()
	if a == nil {
		o.Phase = providers.PhaseLost
		o.Reason = "no job was submitted for it"
		return o, nil
	}
	j, err := p.job(ctx, r, a)
	if errors.Is(err, providers.ErrNotFound) && a.ID == "" && p.opts.Now().Sub(a.Submitted) < time.Minute {
		o.Phase, o.Reason = providers.PhasePending, "being submitted"
	} else if errors.Is(err, providers.ErrNotFound) {
		o.Phase = providers.PhaseLost
		o.Reason = fmt.Sprintf("its job %s is gone from the service", a.Name)
		if a.Stopped != "" {
			o.Phase, o.Reason, o.PastMaxDuration = providers.PhaseKilled, a.Stopped, a.PastMaxDuration
		}
	} else if err != nil {
		return o, err
	} else {
		if j.Phase == providers.PhaseRunning && r.MaxDuration > 0 && j.Started != nil && p.opts.Now().Sub(*j.Started) > r.MaxDuration {
			if a.Stopped == "" {
				a.PastMaxDuration = true // written with Stopped
			}
			if err := p.stopJob(ctx, r, a, "max_duration exceeded ("+r.MaxDuration.String()+")"); err != nil {
				return o, err
			}
		}
		o.Phase, o.Reason, o.ExitCode, o.StartedAt, o.EndedAt, o.Spec = j.Phase, j.Reason, j.ExitCode, j.Started, j.Ended, j.Spec
		if o.ExitCode == nil && j.Phase.Ended() {
			// Services that report no exit status: the command wrote it.
			if b, err := os.ReadFile(p.fs.exitPath(r.Experiment, r.TrialID)); err == nil {
				if c, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
					o.ExitCode = &c
				}
			}
		}
		if j.Phase == providers.PhaseLost {
			o.Phase = providers.PhaseFailed
		}
		if a.Stopped != "" && j.Phase.Ended() {
			o.Phase, o.Reason, o.PastMaxDuration = providers.PhaseKilled, a.Stopped, a.PastMaxDuration
		}
		if o.Reason == "" && o.Phase == providers.PhaseFailed && o.ExitCode != nil {
			o.Reason = fmt.Sprintf("exit status %d", *o.ExitCode)
		}
	}
	if metrics {
		if err := p.metrics(ctx, r, o.Phase, off, &o); err != nil {
			return o, err
		}
	}
	return o, nil
}

// Offset keys in Observation.MetricsOffset.
const (
	offAttempt = "attempt" // the attempt whose log offLog points into
	offLog     = "log"     // byte offset in that attempt's log
	offSeq     = "seq"     // the collector's next PERIODICAL sequence number
	offFinal   = "final"   // 1: a FINAL result was collected
	offDone    = "done"    // 1: the ended attempt's log was read to its end
)

// metrics reads the attempts' logs past off through trialproto.Collector.
func (p *Provider) metrics(ctx context.Context, r *record, phase providers.Phase, off map[string]int64, o *providers.Observation) error {
	cur := len(r.Attempts)
	from := int(off[offAttempt])
	pos := off[offLog]
	if from < 1 || from > cur {
		from, pos = 1, 0
		off = nil
	}
	next := map[string]int64{offAttempt: int64(from), offLog: pos, offSeq: off[offSeq], offFinal: off[offFinal], offDone: off[offDone]}
	if from == cur && off[offDone] == 1 {
		o.MetricsOffset = next
		return nil
	}
	col := trialproto.Collector{ParameterID: r.ParameterID, Seq: int(next[offSeq]), Final: next[offFinal] == 1}
	if r.MetricRegex != "" {
		re, err := regexp.Compile(r.MetricRegex)
		if err != nil {
			return providers.Permanent(fmt.Errorf("metric_regex: %w", err))
		}
		col.Regex = re
	}
	if p.opts.LogsOnMount {
		// One log on the mount, which every attempt appends to.
		from = cur
	}
	for n := from; n <= cur; n++ {
		if n > from {
			pos = 0
		}
		a := &r.Attempts[n-1]
		data, np, err := p.log(ctx, r, a, pos)
		if errors.Is(err, providers.ErrNotFound) {
			data, np, err = nil, pos, nil
		}
		if err != nil {
			return err
		}
		ended := n < cur || phase.Ended() || phase == providers.PhaseLost
		consume := len(data)
		if !ended {
			consume = strings.LastIndexByte(string(data), '\n') + 1
		}
		for _, line := range strings.Split(string(data[:consume]), "\n") {
			if m, ok := col.Line(strings.TrimSuffix(line, "\r")); ok {
				o.Metrics = append(o.Metrics, m)
			}
		}
		next[offAttempt] = int64(n)
		next[offLog] = np - int64(len(data)-consume)
		next[offDone] = 0
		if n == cur && phase.Ended() {
			next[offDone] = 1
		}
	}
	if col.Regex != nil && !col.Final && phase == providers.PhaseSucceeded && next[offDone] == 1 {
		// The synthetic FINAL of regexp metrics: the last value of each
		// name, from the whole log of the attempt that succeeded.
		all := trialproto.Collector{ParameterID: r.ParameterID, Regex: col.Regex}
		data, _, err := p.log(ctx, r, r.last(), 0)
		if err != nil && !errors.Is(err, providers.ErrNotFound) {
			return err
		}
		for _, line := range strings.Split(string(data), "\n") {
			all.Line(strings.TrimSuffix(line, "\r"))
		}
		if m, ok := all.Finish(false); ok {
			o.Metrics = append(o.Metrics, col.Add(m))
		}
	}
	next[offSeq] = int64(col.Seq)
	if col.Final {
		next[offFinal] = 1
	}
	o.MetricsOffset = next
	return nil
}

// log reads attempt a's output past from.
func (p *Provider) log(ctx context.Context, r *record, a *attempt, from int64) ([]byte, int64, error) {
	if p.opts.LogsOnMount {
		f, err := os.Open(p.fs.logPath(r.Experiment, r.TrialID))
		if os.IsNotExist(err) {
			return nil, from, nil
		}
		if err != nil {
			return nil, from, err
		}
		defer f.Close()
		st, err := f.Stat()
		if err != nil {
			return nil, from, err
		}
		if from > st.Size() {
			from = st.Size()
		}
		const max = 8 << 20
		n := st.Size() - from
		if n > max {
			n = max
		}
		b := make([]byte, n)
		k, err := f.ReadAt(b, from)
		if err != nil && k < len(b) {
			return nil, from, err
		}
		return b[:k], from + int64(k), nil
	}
	if a.ID == "" {
		return nil, from, providers.ErrNotFound
	}
	var data []byte
	next := from
	err := p.call(ctx, func(ctx context.Context) error {
		var err error
		data, next, err = p.api.Logs(ctx, a.ID, from)
		return err
	})
	return data, next, err
}

// stopJob asks the service to stop the attempt's job and records why.
func (p *Provider) stopJob(ctx context.Context, r *record, a *attempt, why string) error {
	if a.Stopped == "" {
		a.Stopped = why
		if err := p.fs.writeRecord(r, false); err != nil {
			return err
		}
	}
	if a.ID == "" {
		if _, err := p.job(ctx, r, a); err != nil {
			if errors.Is(err, providers.ErrNotFound) {
				return nil
			}
			return err
		}
	}
	err := p.call(ctx, func(ctx context.Context) error { return p.api.Stop(ctx, a.ID) })
	if errors.Is(err, providers.ErrNotFound) {
		return nil
	}
	return err
}

// Stop stops the trial's job and waits, up to the grace and Options.StopWait,
// for the service to report it ended; with Purge it deletes the jobs (where
// the service can) and the trial's files.
func (p *Provider) Stop(ctx context.Context, req providers.StopRequest) error {
	return p.scrub(p.stop(ctx, req))
}

func (p *Provider) stop(ctx context.Context, req providers.StopRequest) error {
	if checkNames(req.Experiment, req.TrialID) != nil {
		return nil
	}
	defer p.lock(req.Experiment, req.TrialID)()
	r, err := p.fs.readRecord(req.Experiment, req.TrialID)
	if err != nil || r == nil {
		return err
	}
	reason := req.Reason
	if reason == "" {
		reason = "stopped by trialform"
	}
	if a := r.last(); a != nil {
		j, err := p.job(ctx, r, a)
		switch {
		case errors.Is(err, providers.ErrNotFound):
		case err != nil:
			return err
		case !j.Phase.Ended():
			if err := p.stopJob(ctx, r, a, reason); err != nil {
				return fmt.Errorf("stop job %s: %w", a.Name, err)
			}
			if err := p.waitEnded(ctx, r, a, req.Grace+p.opts.StopWait); err != nil {
				return err
			}
		}
	}
	if !req.Purge {
		return nil
	}
	for i := range r.Attempts {
		a := &r.Attempts[i]
		if a.ID == "" {
			if _, err := p.job(ctx, r, a); err != nil {
				continue
			}
		}
		err := p.call(ctx, func(ctx context.Context) error { return p.api.Delete(ctx, a.ID) })
		if err != nil && !errors.Is(err, providers.ErrNotFound) && !errors.Is(err, ErrUnsupported) {
			return fmt.Errorf("delete job %s: %w", a.Name, err)
		}
	}
	return os.RemoveAll(p.fs.trialDir(req.Experiment, req.TrialID))
}

// waitEnded polls the job until the service says it ended (or forgot it).
func (p *Provider) waitEnded(ctx context.Context, r *record, a *attempt, bound time.Duration) error {
	deadline := time.Now().Add(bound)
	wait := p.opts.Poll / 20
	for {
		j, err := p.job(ctx, r, a)
		if errors.Is(err, providers.ErrNotFound) || (err == nil && j.Phase.Ended()) {
			return nil
		}
		if err != nil {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("job %s: asked to stop, the service still says %s after %s; stop it in the service's portal", a.Name, j.Phase, bound)
		}
		if err := netretry.Sleep(ctx, wait); err != nil {
			return err
		}
		wait = min(wait*2, p.opts.Poll)
	}
}

// List finds the experiment's trials on the shared storage.
func (p *Provider) List(ctx context.Context, experiment string) ([]providers.Observation, error) {
	return p.list(ctx, experiment, nil)
}

// ListUnknown is List less the trials known reports: their records are
// not read, nor their jobs asked about.
func (p *Provider) ListUnknown(ctx context.Context, experiment string, known func(trialID string) bool) ([]providers.Observation, error) {
	return p.list(ctx, experiment, known)
}

func (p *Provider) list(ctx context.Context, experiment string, known func(string) bool) ([]providers.Observation, error) {
	if checkNames(experiment, "x") != nil {
		return nil, nil
	}
	ents, err := os.ReadDir(p.fs.expDir(experiment))
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []providers.Observation
	for _, e := range ents {
		if !e.IsDir() || checkNames(experiment, e.Name()) != nil || known != nil && known(e.Name()) {
			continue
		}
		o, err := p.read(ctx, experiment, e.Name(), nil, false)
		if err != nil {
			return nil, p.scrub(err)
		}
		if o.Exists {
			out = append(out, p.scrubObs(o))
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].TrialID < out[j].TrialID })
	return out, nil
}

// Import re-owns a trial on the shared storage to req's lineage.
func (p *Provider) Import(ctx context.Context, req providers.ImportRequest) (providers.Imported, error) {
	if err := checkNames(req.Experiment, req.TrialID); err != nil {
		return providers.Imported{}, err
	}
	unlock := p.lock(req.Experiment, req.TrialID)
	r, err := p.fs.readRecord(req.Experiment, req.TrialID)
	if err == nil && r == nil {
		err = fmt.Errorf("trial %s/%s on platform %s %q: %w", req.Experiment, req.TrialID, p.opts.Kind, p.opts.Name, providers.ErrNotFound)
	}
	if err != nil {
		unlock()
		return providers.Imported{}, err
	}
	prev := r.Owner
	r.Owner.Lineage = req.Lineage
	if req.ExperimentID != "" {
		r.Owner.ExperimentID = req.ExperimentID
	}
	if req.Generation > 0 {
		r.Owner.Generation = req.Generation
	}
	err = p.fs.writeRecord(r, false)
	unlock()
	if err != nil {
		return providers.Imported{}, err
	}
	o, err := p.read(ctx, req.Experiment, req.TrialID, nil, false)
	if err != nil {
		return providers.Imported{}, p.scrub(err)
	}
	return providers.Imported{Seq: r.Seq, ParameterID: r.ParameterID, Params: r.Params, PreviousLineage: prev.Lineage, Previous: prev, Observation: p.scrubObs(o)}, nil
}

// PurgeExperiment stops and purges every trial of the experiment that
// lineage owns.
func (p *Provider) PurgeExperiment(ctx context.Context, experiment, lineage string) error {
	obs, err := p.List(ctx, experiment)
	if err != nil {
		return p.scrub(err)
	}
	for _, o := range obs {
		if o.Lineage != lineage && o.Lineage != "" {
			continue
		}
		if err := p.Stop(ctx, providers.StopRequest{Experiment: experiment, TrialID: o.TrialID, Purge: true, Reason: "destroyed"}); err != nil {
			return p.scrub(err)
		}
	}
	return nil
}

// Logs copies the latest job's output to req.Out; with Follow until the job
// ended.
func (p *Provider) Logs(ctx context.Context, req providers.LogsRequest) error {
	return p.scrub(p.logs(ctx, req))
}

func (p *Provider) logs(ctx context.Context, req providers.LogsRequest) error {
	if err := checkNames(req.Experiment, req.TrialID); err != nil {
		return err
	}
	r, err := p.fs.readRecord(req.Experiment, req.TrialID)
	if err == nil && (r == nil || r.last() == nil) {
		err = fmt.Errorf("trial %s/%s on platform %s %q: %w", req.Experiment, req.TrialID, p.opts.Kind, p.opts.Name, providers.ErrNotFound)
	}
	if err != nil {
		return err
	}
	a := r.last()
	var pos int64
	wait := p.opts.Poll / 20
	for {
		// Read the phase first, then the log: once the job ended, one more
		// read of the log has everything.
		ended := true
		if req.Follow {
			j, err := p.job(ctx, r, a)
			ended = err != nil || j.Phase.Ended()
		}
		for {
			data, next, err := p.log(ctx, r, a, pos)
			if err != nil {
				return err
			}
			if _, err := req.Out.Write(data); err != nil {
				return err
			}
			pos = next
			if len(data) == 0 {
				break
			}
		}
		if ended {
			return nil
		}
		if err := netretry.Sleep(ctx, wait); err != nil {
			return err
		}
		wait = min(wait*2, p.opts.Poll)
	}
}
