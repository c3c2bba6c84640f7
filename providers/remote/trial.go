package remote

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/trialform/trialform/providers"
	"github.com/trialform/trialform/providers/trialproto"
)

func checkName(what, s string) error {
	if s == "" || s == "." || s == ".." || strings.HasPrefix(s, ".") || strings.ContainsAny(s, "/\\\x00\n") || len(s) > 200 {
		return providers.Permanent(fmt.Errorf("%s %q cannot name a directory", what, s))
	}
	return nil
}

func (m *machine) trialDir(exp, id string) string { return path.Join(m.work, "trials", exp, id) }
func (r *Remote) libDir(m *machine) string        { return path.Join(m.work, "lib", r.lib.hash) }

// downError is a machine that cannot be reached right now (m nil: no
// machine could be).
type downError struct {
	m   *machine
	err error
}

func (e *downError) Error() string { return e.err.Error() }
func (e *downError) Unwrap() error { return e.err }

// locate finds the trial: on the handle's machine, or else on any
// machine. tf.sp is nil when it exists nowhere reachable.
func (r *Remote) locate(ctx context.Context, exp, id string, h providers.Handle) (*trialFiles, error) {
	if err := checkName("experiment", exp); err != nil {
		return nil, err
	}
	if err := checkName("trial id", id); err != nil {
		return nil, err
	}
	if m := r.machineByKey(h["machine"]); m != nil {
		if _, _, err := m.connected(ctx); err != nil {
			if providers.IsPermanent(err) && !isRefused(err) {
				return nil, err
			}
			return nil, &downError{m, err}
		}
		tf, err := m.load(ctx, m.trialDir(exp, id))
		if err != nil && !providers.IsPermanent(err) {
			// (Hung in this call: down, even if another call's answer
			// has marked it up meanwhile.)
			if _, down := r.downSince(m); down || hungOn(ctx, m) {
				return nil, &downError{m, err}
			}
		}
		return tf, err
	}
	// Every machine is asked at once; one still connecting a moment
	// after another answered is not waited for (eachMachine).
	res, errs := eachMachine(ctx, r, r.machines, func(ctx context.Context, _ int, m *machine) (*trialFiles, error) {
		return m.load(ctx, m.trialDir(exp, id))
	})
	var first *trialFiles
	for i, tf := range res {
		if tf != nil && tf.sp != nil {
			return tf, nil
		}
		if tf != nil && first == nil {
			first = tf
		}
		if errs[i] != nil && providers.IsPermanent(errs[i]) && !isRefused(errs[i]) {
			return nil, errs[i]
		}
	}
	if first == nil {
		return nil, &downError{err: errors.Join(errs...)}
	}
	return first, nil
}

// Read observes one trial. A trial that cannot be read, its machine
// unreachable or a file of its own hanging there, is an error until it
// has been so for lost_grace, then LOST (the planner resumes it when the
// machine is back). The outage is the trial's own (unreadInfo): only a
// read of it that gets all it needs ends it.
func (r *Remote) Read(ctx context.Context, req providers.ReadRequest) (providers.Observation, error) {
	// The machine is up again when what this read needs answered
	// (upScope), not when its spec.json did and its status file hangs.
	ctx, up := r.withUpScope(ctx)
	defer up()
	absent := providers.Observation{TrialID: req.TrialID, Experiment: req.Experiment}
	tf, err := r.locate(ctx, req.Experiment, req.TrialID, req.Handle)
	var de *downError
	if errors.As(err, &de) && de.m != nil {
		return r.unreachable(ctx, de, req.TrialID, req.Experiment, req.Handle)
	}
	if err != nil {
		return providers.Observation{}, err
	}
	if tf.sp == nil {
		r.readable(tf.m, req.Experiment, req.TrialID)
		return absent, nil
	}
	o := tf.observe()
	r.settle(tf.m, o)
	o.Metrics, o.MetricsOffset, err = tf.metrics(req.MetricsOffset, o.Phase.Ended() || o.Phase == providers.PhaseLost, o.Phase.Ended(), o.Phase == providers.PhaseSucceeded)
	if err != nil {
		if hungOn(ctx, tf.m) { // its metrics hang: as its status would
			return r.unreachable(ctx, &downError{tf.m, err}, req.TrialID, req.Experiment, req.Handle)
		}
		return providers.Observation{}, err
	}
	if o.Phase.Ended() { // (read once the trial ended: two more round trips)
		o.Note = tf.cutNote()
	}
	if !hungOn(ctx, tf.m) {
		r.readable(tf.m, req.Experiment, req.TrialID)
	}
	return o, nil
}

// unreachable is the read of a trial that could not get what it needs on
// de.m: an error until the trial's outage (unreadable) reaches
// lost_grace, then LOST. While the machine has been down since the
// trial's outage began, the words are the machine's, the same for each
// of its trials (a refresh says them once); when the machine answered
// since (other trials read fine), they are the trial's, naming what
// hangs.
func (r *Remote) unreachable(ctx context.Context, de *downError, id, exp string, h providers.Handle) (providers.Observation, error) {
	d, ok := r.downSince(de.m)
	hung := hungOn(ctx, de.m)
	if !ok && !hung {
		return providers.Observation{}, de
	}
	u := r.unreadable(de.m, exp, id, hung, de.err)
	var what, why, whose string
	at := time.Now()
	if ok && !d.Since.After(u.Since) {
		// The error before lost_grace: as of the last try, so that
		// every read that reuses it says the same.
		if !d.lastTry.IsZero() {
			at = d.lastTry
		}
		what = "unreachable"
		if d.Refused {
			what = "refusing trialform"
		}
		whose = "its trials become"
		// What happened, without naming the machine a second time.
		why = strings.TrimPrefix(strings.TrimPrefix(d.Err, "machine "+de.m.key+" unreachable: "), "machine "+de.m.key+": ")
	} else {
		what = "has not answered for trial " + exp + "/" + id
		whose = "the trial becomes"
		why = u.Err
		if why == "" && ok {
			why = strings.TrimPrefix(d.Err, "machine "+de.m.key+": ")
		}
	}
	dur := at.Sub(u.Since).Round(time.Second)
	out := time.Since(u.Since)
	if out < r.cfg.LostGrace {
		return providers.Observation{}, fmt.Errorf("machine %s %s for %s; %s LOST after lost_grace %s: %s", de.m.key, what, dur, whose, r.cfg.LostGrace, why)
	}
	// LOST: the outage that made it so, to now (at least lost_grace), not
	// to the last try, which said "unreachable for 2s (lost_grace 3s)".
	dur = out.Round(time.Second)
	return providers.Observation{
		TrialID: id, Experiment: exp, Exists: true, Phase: providers.PhaseLost, Handle: h,
		Reason: fmt.Sprintf("machine %s %s for %s (lost_grace %s): %s", de.m.key, what, dur, r.cfg.LostGrace, why),
	}, nil
}

// settle frees the trial's slot once it is no longer running.
func (r *Remote) settle(m *machine, o providers.Observation) {
	if o.Phase == providers.PhaseRunning || o.Phase == providers.PhasePending {
		return
	}
	r.schedMu.Lock()
	delete(m.busy, o.Experiment+"/"+o.TrialID)
	r.schedMu.Unlock()
}

// Start creates or adopts the trial (see the providers contract): a trial
// that runs is adopted, an ended one returned as is unless req.Resume;
// otherwise a new attempt starts, on the trial's machine when it has one
// (its output dir is there), else on the machine with the most free
// slots. Every machine is asked at once, and one still connecting
// dialGrace after another answered is not waited for (eachMachine): a
// silent machine does not hold up a placement. No free slot anywhere is
// an error wrapping providers.ErrNoCapacity
// that says why, and so is a trial's machine (or, for a trial without
// one, every machine) that cannot be reached: the trial waits for it.
func (r *Remote) Start(ctx context.Context, req providers.StartRequest) (providers.Handle, error) {
	if err := validateStart(req); err != nil {
		return nil, err
	}
	mu := r.uploadLock("trial\x00" + req.Experiment + "/" + req.TrialID)
	mu.Lock()
	defer mu.Unlock()
	tf, err := r.locate(ctx, req.Experiment, req.TrialID, req.Handle)
	var de *downError
	if errors.As(err, &de) {
		if de.m == nil {
			// No machine answered: the trial waits for one.
			return nil, noCapacity(fmt.Sprintf("no machine of %s can be reached: %v", r.cfg.Name, err))
		}
		// Its output dir is there, and it may have ended there: it waits
		// for the machine (a start failure would end it FAILED).
		return nil, noCapacity(fmt.Sprintf("trial %s waits for its machine: %v", req.TrialID, err))
	}
	if err != nil {
		return nil, err
	}
	attempt := 1
	var only *machine
	if tf.sp != nil {
		if err := providers.CheckOwner(tf.m.key+":"+tf.dir, req, tf.sp.owner()); err != nil {
			return nil, err
		}
		o := tf.observe()
		switch {
		case o.Phase == providers.PhaseRunning || o.Phase == providers.PhasePending:
			return o.Handle, nil
		case o.Phase.Ended() && !req.Resume:
			return o.Handle, nil
		}
		attempt = tf.sp.Attempt + 1
		if tf.st != nil && tf.st.Attempt >= attempt {
			attempt = tf.st.Attempt + 1
		}
		only = tf.m
		r.settle(tf.m, o)
	}
	code, err := r.codeFor(req.Experiment, req.CodeDir)
	if err != nil {
		return nil, err
	}
	m, gpus, err := r.reserve(ctx, req, only)
	if err != nil {
		return nil, err
	}
	key := req.Experiment + "/" + req.TrialID
	h, err := r.launch(ctx, m, req, code, gpus, attempt)
	if err != nil {
		r.schedMu.Lock()
		delete(m.busy, key)
		r.schedMu.Unlock()
		return nil, fmt.Errorf("start on %s: %w", m.key, err)
	}
	return h, nil
}

func (r *Remote) launch(ctx context.Context, m *machine, req providers.StartRequest, code *bundle, gpus []int, attempt int) (providers.Handle, error) {
	lib := r.libDir(m)
	if err := r.upload(ctx, m, r.lib, lib); err != nil {
		return nil, err
	}
	codeDir := path.Join(m.work, "code", code.hash)
	if err := r.upload(ctx, m, code, codeDir); err != nil {
		return nil, err
	}
	dir := m.trialDir(req.Experiment, req.TrialID)
	run, err := runScript(req, m, dir, lib, gpus, attempt)
	if err != nil {
		return nil, err
	}
	sp := &spec{Version: 1, Experiment: req.Experiment, TrialID: req.TrialID, Lineage: req.Lineage, Attempt: attempt,
		ExperimentID: req.ExperimentID, Generation: req.Generation, ParamsDigest: providers.ParamsDigest(req.Params),
		ParameterID: req.ParameterID, MetricRegex: req.MetricRegex, Machine: m.key, GPUs: gpus, CreatedAt: time.Now().UTC()}
	spb, _ := json.Marshal(sp)
	// The attempt's files travel in the launch command itself: a single
	// round trip through a persistent shell.
	maxdur := "0"
	if req.MaxDuration > 0 {
		maxdur = seconds(req.MaxDuration)
	}
	var cmd strings.Builder
	// 0700 directories and 0600 files: run.sh may hold a sensitive env
	// value. The trial itself runs with the usual umask.
	cmd.WriteString("umask 077 && mkdir -p " + shq(dir) + " && chmod 700 " + shq(dir))
	for _, f := range []struct {
		name string
		data []byte
	}{
		{"parameter.cfg", trialproto.ParameterCfg(req.ParameterID, req.Params)},
		{"params.json", trialproto.ParamsJSON(req.Params)},
		{"run.sh", []byte(run)},
		{specFile, spb},
	} {
		if bytes.IndexByte(f.data, 0) >= 0 {
			return nil, providers.Permanent(fmt.Errorf("%s of trial %s holds a NUL byte", f.name, req.TrialID))
		}
		cmd.WriteString(" && printf '%s' " + shq(string(f.data)) + " >" + shq(path.Join(dir, f.name)))
	}
	cmd.WriteString(" && umask 022 && sh " + shline(path.Join(lib, "launch.sh"), dir, strconv.Itoa(attempt), codeDir, maxdur, seconds(r.cfg.StopGrace), joinInts(gpus), strconv.FormatInt(r.cfg.OutputLimit, 10)))
	out, err := m.sh(ctx, cmd.String())
	if err != nil {
		return nil, err
	}
	st := parseStatus(out)
	if st == nil {
		return nil, fmt.Errorf("launch printed no status: %q", out)
	}
	tf := &trialFiles{m: m, dir: dir, sp: sp, st: st}
	return tf.handle(), nil
}

func validateStart(req providers.StartRequest) error { return req.Validate() }

// Stop stops the trial's process group on its machine (SIGTERM, SIGKILL
// after the grace period) and, with Purge, removes its directory there. A
// trial that is gone or ended is not an error; an unreachable machine is.
func (r *Remote) Stop(ctx context.Context, req providers.StopRequest) error {
	tf, err := r.locate(ctx, req.Experiment, req.TrialID, req.Handle)
	var de *downError
	if errors.As(err, &de) {
		// Its machine is away (or backed off): the stop is tried again
		// when it answers (providers.ErrUnreachable).
		return &unreachableStop{fmt.Sprintf("stop of trial %s waits for its machine: %v", req.TrialID, err)}
	}
	if err != nil {
		return err
	}
	if tf.sp == nil {
		return nil
	}
	grace := req.Grace
	if grace <= 0 {
		grace = r.cfg.StopGrace
	}
	reason := req.Reason
	if reason == "" {
		reason = "stopped by trialform"
	}
	purge := "0"
	if req.Purge {
		purge = "1"
	}
	if err := r.upload(ctx, tf.m, r.lib, r.libDir(tf.m)); err != nil {
		return err
	}
	steps := strconv.Itoa(int(grace / (20 * time.Millisecond)))
	if _, err := tf.m.sh(ctx, "sh "+shline(path.Join(r.libDir(tf.m), "stop.sh"), tf.dir, steps, purge, reason)); err != nil {
		return fmt.Errorf("stop trial %s on %s: %w", req.TrialID, tf.m.key, err)
	}
	r.schedMu.Lock()
	delete(tf.m.busy, req.Experiment+"/"+req.TrialID)
	r.schedMu.Unlock()
	return nil
}

// List returns the trials of experiment on every reachable machine
// (without metrics), sorted by trial id.
func (r *Remote) List(ctx context.Context, experiment string) ([]providers.Observation, error) {
	obs, unread, err := r.list(ctx, experiment, nil)
	r.warnUnread(experiment, unread)
	return obs, err
}

// warnUnread says which trial directories a listing found and could not
// read: their state is unknown, not "none".
func (r *Remote) warnUnread(experiment string, unread []error) {
	for _, err := range unread {
		r.warn(fmt.Sprintf("%v; that trial of experiment %s was not listed: its state is unknown until it can be read", err, experiment))
	}
}

// ListUnknown is List less the trials known reports: a machine's trial
// directories are listed (one SFTP directory read) and only the unknown
// ones are read, so a refresh's cost does not grow with finished history.
func (r *Remote) ListUnknown(ctx context.Context, experiment string, known func(trialID string) bool) ([]providers.Observation, error) {
	obs, unread, err := r.list(ctx, experiment, known)
	r.warnUnread(experiment, unread)
	return obs, err
}

// list lists the trials of experiment on every machine; unread are the
// trial directories it found and could not read (a file that hangs, or
// is not valid), which it leaves out.
func (r *Remote) list(ctx context.Context, experiment string, known func(string) bool) (_ []providers.Observation, unread []error, _ error) {
	ctx, up := r.withUpScope(ctx)
	defer up()
	if err := checkName("experiment", experiment); err != nil {
		return nil, nil, err
	}
	var mu sync.Mutex
	var out []providers.Observation
	var errs []error
	var wg sync.WaitGroup
	for _, m := range r.machines {
		wg.Add(1)
		go func(m *machine) {
			defer wg.Done()
			_, _, err := m.connected(ctx)
			if err != nil {
				if providers.IsPermanent(err) && !isRefused(err) {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
					return
				}
				// Its trials the state knows are read (and go LOST)
				// one by one; the ones it does not know cannot be
				// found: say so rather than list as if there were none.
				r.warn(fmt.Sprintf("%v; the trials of experiment %s on it were not listed: their state is unknown until it answers", err, experiment))
				return
			}
			base := path.Join(m.work, "trials", experiment)
			// Bounded (lister): a dir of millions of entries is not
			// kept whole; the trials listed are read, the warning says
			// the rest were not.
			var ents []fs.FileInfo
			lst, err := m.lister(ctx)
			if err == nil {
				ents, err = lst.readDir(base)
				lst.close()
			}
			var cut *listingCutError
			if errors.As(err, &cut) {
				r.warn(fmt.Sprintf("%v; the trials of experiment %s past it were not listed: their state is unknown", err, experiment))
			} else if err != nil {
				if errors.Is(err, fs.ErrNotExist) {
					return
				}
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
				return
			}
			var iw sync.WaitGroup
			sem := make(chan struct{}, 32) // SFTP requests in flight
			for _, e := range ents {
				if !e.IsDir() || checkName("trial id", e.Name()) != nil || known != nil && known(e.Name()) {
					continue
				}
				iw.Add(1)
				sem <- struct{}{}
				go func(name string) {
					defer iw.Done()
					defer func() { <-sem }()
					tf, err := m.load(ctx, path.Join(base, name))
					if err != nil {
						mu.Lock()
						unread = append(unread, fmt.Errorf("machine %s: trial %s: %w", m.key, name, err))
						mu.Unlock()
						return
					}
					if tf.sp == nil {
						return
					}
					o := tf.observe()
					r.settle(m, o)
					mu.Lock()
					out = append(out, o)
					mu.Unlock()
				}(e.Name())
			}
			iw.Wait()
		}(m)
	}
	wg.Wait()
	if len(errs) > 0 {
		return nil, unread, errors.Join(errs...)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].TrialID < out[j].TrialID })
	sort.Slice(unread, func(i, j int) bool { return unread[i].Error() < unread[j].Error() })
	return out, unread, nil
}

// Logs copies the trial's stdout, then its stderr, to req.Out, a line at
// a time (providers.LineStreams). With Follow it keeps copying (every
// 200ms) until the attempt ended.
func (r *Remote) Logs(ctx context.Context, req providers.LogsRequest) error {
	tf, err := r.locate(ctx, req.Experiment, req.TrialID, req.Handle)
	if err != nil {
		return err
	}
	if tf.sp == nil {
		return fmt.Errorf("logs of trial %s: %w", req.TrialID, providers.ErrNotFound)
	}
	files := []string{path.Join(tf.dir, stdoutFile), path.Join(tf.dir, stderrFile)}
	offs := make([]int64, len(files))
	streams := providers.NewLineStreams(req.Out, len(files))
	copyNew := func(final bool) error {
		for i, f := range files {
			out := streams.Stream(i)
			for {
				// The middle the output cap freed is one line here.
				cut, err := readCut(tf.s, f)
				if err != nil {
					return tf.m.sftpErr(tf.c, err)
				}
				max := int64(4 << 20)
				if cut.ok() && offs[i] < cut.To {
					if offs[i] >= cut.From {
						if err := streams.Gap(i, fmt.Sprintf("[trialform: %d bytes of %s not kept here: the remote platform keeps the first and the latest %d MiB of it]", cut.To-cut.From, path.Base(f), cut.Limit>>21)); err != nil {
							return err
						}
						offs[i] = cut.To
						continue
					}
					max = min(max, cut.From-offs[i])
				}
				data, at, err := readFrom(tf.s, f, offs[i], max)
				if err != nil {
					return tf.m.sftpErr(tf.c, err)
				}
				if len(data) == 0 {
					break
				}
				if _, err := out.Write(data); err != nil {
					return err
				}
				offs[i] = at + int64(len(data))
			}
			if final {
				if err := streams.End(i); err != nil {
					return err
				}
			}
		}
		return nil
	}
	for {
		o := tf.observe()
		done := o.Phase.Ended() || o.Phase == providers.PhaseLost
		if err := copyNew(!req.Follow || done); err != nil {
			return err
		}
		if !req.Follow || done {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
		next, err := tf.m.load(ctx, tf.dir)
		if err != nil {
			return err
		}
		if next.sp == nil {
			return nil
		}
		tf = next
	}
}

// reserve picks a machine (only, when set) with a free slot and holds the
// slot for the trial.
func (r *Remote) reserve(ctx context.Context, req providers.StartRequest, only *machine) (*machine, []int, error) {
	cands := r.machines
	if only != nil {
		cands = []*machine{only}
	}
	enough := false
	for _, m := range cands {
		if req.GPUs == 0 || len(m.cfg.GPUIndices) >= req.GPUs {
			enough = true
		}
	}
	if !enough {
		return nil, nil, providers.Permanent(fmt.Errorf("trial needs %d GPUs but no machine of %s has that many in gpu_indices", req.GPUs, r.cfg.Name))
	}
	key := req.Experiment + "/" + req.TrialID
	for round := 0; ; round++ {
		down := map[*machine]error{}
		stale := make([]bool, len(cands))
		r.schedMu.Lock()
		for i, m := range cands {
			stale[i] = m.scanned.IsZero() || (round > 0 && time.Since(m.scanned) > 300*time.Millisecond)
		}
		r.schedMu.Unlock()
		// Every machine is asked at once; one still connecting a moment
		// after another answered is left out of this placement
		// (eachMachine), as an unreachable one is.
		_, errs := eachMachine(ctx, r, cands, func(ctx context.Context, i int, m *machine) (struct{}, error) {
			if !stale[i] {
				return struct{}{}, nil // connected, and counted lately
			}
			return struct{}{}, r.scan(ctx, m)
		})
		for i, m := range cands {
			err := errs[i]
			if err == nil {
				continue
			}
			if stale[i] && providers.IsPermanent(err) && !isRefused(err) {
				return nil, nil, err
			}
			down[m] = err
		}
		r.schedMu.Lock()
		best, gpus, why := r.choose(cands, down, req)
		if best != nil {
			best.busy[key] = slot{gpus: gpus, at: time.Now()}
			r.schedMu.Unlock()
			return best, gpus, nil
		}
		r.schedMu.Unlock()
		if round > 0 {
			return nil, nil, noCapacity(why)
		}
	}
}

// capacityError is a start that waits (providers.ErrNoCapacity): its
// text says why, without ErrNoCapacity's own words appended. It wraps
// nothing else: a refused machine's permanent error must not make the
// wait permanent.
type capacityError struct{ msg string }

func noCapacity(msg string) error { return &capacityError{msg} }

func (e *capacityError) Error() string        { return e.msg }
func (e *capacityError) Is(target error) bool { return target == providers.ErrNoCapacity }

// unreachableStop is a stop whose machine cannot be reached now
// (providers.ErrUnreachable). It wraps nothing else: a refused machine's
// permanent error must not make the wait permanent.
type unreachableStop struct{ msg string }

func (e *unreachableStop) Error() string { return e.msg }
func (e *unreachableStop) Is(target error) bool {
	return target == providers.ErrUnreachable
}

// unusableError is a machine that answers but cannot take trials (its
// work_dir cannot be written): the error names the machine and says what
// to fix.
type unusableError struct{ err error }

func (e *unusableError) Error() string { return e.err.Error() }
func (e *unusableError) Unwrap() error { return e.err }

// slot is a live (or just reserved) trial on a machine.
type slot struct {
	gpus []int
	at   time.Time
}

// choose picks the machine with the most free slots (caller holds
// schedMu) or says why there is none.
func (r *Remote) choose(cands []*machine, down map[*machine]error, req providers.StartRequest) (*machine, []int, string) {
	var best *machine
	var bestGPUs []int
	bestFree := 0
	var why []string
	gpuShort := false
	for _, m := range cands {
		if err, ok := down[m]; ok {
			var ue *unusableError
			var sd *stillDialling
			switch {
			case errors.As(err, &ue) || isRefused(err):
				why = append(why, err.Error())
			case errors.As(err, &sd):
				why = append(why, m.key+" still connecting")
			default:
				why = append(why, m.key+" unreachable")
			}
			continue
		}
		limit := m.cfg.MaxTrials
		if limit <= 0 {
			limit = m.ncpu
		}
		if limit <= 0 {
			limit = 1
		}
		free := limit - len(m.busy)
		if free <= 0 {
			why = append(why, fmt.Sprintf("%s %d/%d busy", m.key, len(m.busy), limit))
			continue
		}
		var gpus []int
		if req.GPUs > 0 {
			load := map[int]int{}
			for _, s := range m.busy {
				for _, g := range s.gpus {
					load[g]++
				}
			}
			var freeG []int
			full := 0
			for _, g := range m.cfg.GPUIndices {
				if load[g] < m.cfg.MaxTrialsPerGPU {
					freeG = append(freeG, g)
				} else {
					full++
				}
			}
			if len(freeG) < req.GPUs {
				gpuShort = true
				why = append(why, fmt.Sprintf("%s %d/%d GPUs busy (max %d trials per GPU)", m.key, full, len(m.cfg.GPUIndices), m.cfg.MaxTrialsPerGPU))
				continue
			}
			sort.SliceStable(freeG, func(i, j int) bool { return load[freeG[i]] < load[freeG[j]] })
			gpus = append([]int(nil), freeG[:req.GPUs]...)
			sort.Ints(gpus)
		}
		if best == nil || free > bestFree {
			best, bestGPUs, bestFree = m, gpus, free
		}
	}
	if best != nil {
		return best, bestGPUs, ""
	}
	what := "slot"
	if gpuShort {
		what = "GPU"
	}
	return nil, nil, fmt.Sprintf("no free %s on %s: %s", what, r.cfg.Name, strings.Join(why, ", "))
}

// scan counts the live trials on m (one remote command) and its CPUs.
func (r *Remote) scan(ctx context.Context, m *machine) error {
	if _, _, err := m.connected(ctx); err != nil {
		return err
	}
	if err := r.upload(ctx, m, r.lib, r.libDir(m)); err != nil {
		var ee *exitError
		if errors.As(err, &ee) {
			return &unusableError{fmt.Errorf("cannot write work_dir %s on %s: %w; make it writable by %q there, or set work_dir (of the platform or of that machine block) to a directory it can write", m.work, m.key, err, m.cfg.User)}
		}
		return err
	}
	start := time.Now()
	out, err := m.sh(ctx, "sh "+shline(path.Join(r.libDir(m), "scan.sh"), path.Join(m.work, "trials")))
	if errors.Is(err, errTooMuchOutput) {
		// It answers, but what it says cannot be trusted: no trial
		// goes there.
		return &unusableError{fmt.Errorf("%w (%s)", err, path.Join(r.libDir(m), "scan.sh"))}
	}
	if err != nil {
		return err
	}
	busy := map[string]slot{}
	ncpu := 0
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) == 2 && f[0] == "ncpu":
			ncpu, _ = strconv.Atoi(f[1])
		case len(f) >= 1:
			var gpus []int
			if len(f) == 2 {
				for _, g := range strings.Split(f[1], ",") {
					if i, err := strconv.Atoi(g); err == nil {
						gpus = append(gpus, i)
					}
				}
			}
			busy[f[0]] = slot{gpus: gpus, at: start}
		}
	}
	r.schedMu.Lock()
	defer r.schedMu.Unlock()
	// Keep what this process reserved while the scan ran.
	for k, s := range m.busy {
		if _, ok := busy[k]; !ok && s.at.After(start.Add(-2*time.Second)) {
			busy[k] = s
		}
	}
	m.busy, m.ncpu, m.scanned = busy, ncpu, time.Now()
	return nil
}

// Location is the machine ("host:port") a trial's handle names.
func (r *Remote) Location(h providers.Handle) string { return h["machine"] }

// Foreign says so when h names a machine the platform block does not
// list: a Read looks for the trial on the listed machines, finds it on
// none and calls it lost, and a resume runs it again on one of them.
func (r *Remote) Foreign(h providers.Handle) string {
	key := h["machine"]
	if key == "" || r.machineByKey(key) != nil {
		return ""
	}
	keys := make([]string, len(r.machines))
	for i, m := range r.machines {
		keys[i] = m.key
	}
	return fmt.Sprintf("it runs on machine %s, which the platform block does not list (it lists %s)", key, strings.Join(keys, ", "))
}
