package local

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/trialform/trialform/internal/fsx"
	"github.com/trialform/trialform/providers"
	"github.com/trialform/trialform/providers/trialproto"
)

// Offset keys of Observation.MetricsOffset.
const (
	// trialproto.OffsetAttempt and OffsetNNI: where NNI's metric files
	// (.nni/metrics, archived as .nni/metrics.N) were read to.
	offStdout  = "stdout"  // byte offset in metrics.stdout (all attempts)
	offKept    = "kept"    // intermediate results returned so far
	offDropped = "dropped" // intermediate results dropped past providers.MaxIntermediate
)

// metricChunk is how much of a metric file one step of a Read parses: a
// Read goes on to the end of each file in such steps, keeping at most
// providers.MaxIntermediate intermediate results per trial, so its memory
// is bounded whatever the trial wrote.
const metricChunk = 4 << 20

// maxGarbage bounds the unreadable records one Read returns.
const maxGarbage = 20

// Read observes one trial: unknown -> Exists false; a live supervisor ->
// pending/running; a recorded end -> succeeded (exit 0), failed (non-zero
// exit, a signal, or could not start) or killed (Stop, max_duration); no
// end recorded and no process left -> succeeded when the attempt reported
// its final result (its end is then recorded: orphanend.go), else lost. Metrics are those past
// req.MetricsOffset: NNI's file (all attempts) first, then the records
// parsed from stdout; the order between those two sources is not kept.
func (l *Local) Read(ctx context.Context, req providers.ReadRequest) (providers.Observation, error) {
	dir, err := l.trialDir(req.Experiment, req.TrialID)
	if err != nil {
		return providers.Observation{}, err
	}
	if o, ok := l.launchingObservation(dir, req); ok {
		return o, nil
	}
	sp, st, unlock, err := openTrial(ctx, dir, syscall.LOCK_SH, false)
	if err != nil {
		return providers.Observation{}, err
	}
	if sp == nil {
		return providers.Observation{TrialID: req.TrialID, Experiment: req.Experiment}, nil
	}
	defer func() { unlock() }()
	if st == nil && launching(dir) {
		// Its supervisor holds the launch lock: the attempt is being
		// started (Start handed it over and returned). Pending, without
		// waiting for it; its metrics come with the next Read.
		return pendingObservation(dir, sp, sp.owner(), req), nil
	}
	o := observe(dir, sp, st)
	if o.Phase == providers.PhaseLost && st != nil && st.Host {
		l.hostDied(st.SupervisorPID)
	}
	if o.Phase == providers.PhaseLost && ended(sp, st) {
		// The trial ended while its supervisor was gone: record its end
		// if it reported its final result (orphanend.go), and look again.
		unlock()
		unlock = func() {}
		final, err := settleOrphan(ctx, dir)
		if err != nil {
			return providers.Observation{}, err
		}
		if sp, st, unlock, err = openTrial(ctx, dir, syscall.LOCK_SH, false); err != nil {
			unlock = func() {}
			return providers.Observation{}, err
		}
		if sp == nil {
			unlock = func() {}
			return providers.Observation{TrialID: req.TrialID, Experiment: req.Experiment}, nil
		}
		o = observe(dir, sp, st)
		if o.Phase == providers.PhaseLost && !final && ended(sp, st) {
			o.Reason = lostReason
		}
	}
	o.Metrics, o.MetricsOffset, err = readMetrics(dir, sp.Attempt, req.MetricsOffset)
	if err == nil {
		dropped, overlong := o.MetricsOffset[offDropped], int64(0)
		if st != nil && st.Attempt == sp.Attempt {
			dropped, overlong = dropped+st.Dropped, st.Overlong
		}
		unrecorded := ""
		if st != nil && st.Attempt == sp.Attempt && st.Outcome == outcomeUnrecorded {
			unrecorded = st.Reason
		}
		o.Note = joinNotes(unrecorded, capNote(dropped), overlongNote(overlong), stdoutNote(dir))
	}
	if err != nil {
		return providers.Observation{}, err
	}
	return o, nil
}

// pendingObservation is what Read says of an attempt being launched.
func pendingObservation(dir string, sp *spec, owner providers.Owner, req providers.ReadRequest) providers.Observation {
	return providers.Observation{
		TrialID: sp.TrialID, Experiment: sp.Experiment, Exists: true, Lineage: sp.Lineage, Owner: owner,
		Phase: providers.PhasePending, Handle: handle(dir, nil), MetricsOffset: req.MetricsOffset,
	}
}

// launchingObservation answers a Read of an attempt this process handed to
// its supervisor host (Start with Handoff) that the host has not said runs
// yet: pending, from the spec Start wrote, without a look at the trial
// dir. The host answers once the attempt's first records are written, so
// until then the files can only say the same.
func (l *Local) launchingObservation(dir string, req providers.ReadRequest) (providers.Observation, bool) {
	l.hostMu.Lock()
	h := l.h
	l.hostMu.Unlock()
	if h == nil || !h.isLaunching(dir) {
		return providers.Observation{}, false
	}
	e, ok := specs.cached(dir)
	if !ok {
		return providers.Observation{}, false
	}
	return pendingObservation(dir, e.sp, e.owner, req), true
}

// openTrial locks the trial dir (how: syscall.LOCK_SH or LOCK_EX) and
// reads its spec and status, waiting for a supervisor that may still be
// starting (launched by a CLI that died) rather than call the attempt
// lost. sp is nil, and nothing is held, when there is no trial (or it was
// purged meanwhile); else the caller calls unlock.
//
// With wait false a supervisor still starting is not waited for: st is
// then nil (launching tells it apart from no supervisor at all).
func openTrial(ctx context.Context, dir string, how int, wait bool) (sp *spec, st *status, unlock func(), err error) {
	if _, err := os.Stat(filepath.Join(dir, specFile)); errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil, nil
	}
	unlock, err = lockDir(ctx, dir, how)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) { // purged meanwhile
			return nil, nil, nil, nil
		}
		return nil, nil, nil, err
	}
	fail := func(err error) (*spec, *status, func(), error) {
		unlock()
		return nil, nil, nil, err
	}
	if sp, err = specs.read(dir); err != nil || sp == nil {
		return fail(err)
	}
	if st, err = readStatus(dir); err != nil {
		return fail(err)
	}
	if st == nil || st.Attempt != sp.Attempt {
		if !wait && launching(dir) {
			return sp, nil, unlock, nil
		}
		if err := waitLaunch(ctx, dir); err != nil {
			return fail(err)
		}
		if st, err = readStatus(dir); err != nil {
			return fail(err)
		}
	}
	return sp, st, unlock, nil
}

// specs caches the specs openTrial read: a running trial is read at every
// pass of apply's loop, and its spec changes only when Start replaces it
// (a new file: a new inode). An entry is used while the file's inode,
// size, modification and change times are those it was read with; the
// cache is emptied past specCacheMax entries. Its specs are shared:
// nobody modifies a spec it read.
var specs = &specCache{m: map[string]cachedSpec{}}

const specCacheMax = 4096

type specCache struct {
	mu sync.Mutex
	m  map[string]cachedSpec
}

type cachedSpec struct {
	key   [4]int64 // inode, size, mtime, ctime (ns)
	sp    *spec
	owner providers.Owner // sp.owner()
}

// cached returns dir's entry as it is, without looking at the file: for an
// attempt this process launched and nobody else can have replaced.
func (c *specCache) cached(dir string) (cachedSpec, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[dir]
	return e, ok
}

func (c *specCache) read(dir string) (*spec, error) {
	path := filepath.Join(dir, specFile)
	var fi syscall.Stat_t
	if err := syscall.Stat(path, &fi); err != nil {
		if errors.Is(err, syscall.ENOENT) {
			return nil, nil
		}
		return nil, fmt.Errorf("stat %s: %w", path, err)
	}
	key := specKey(&fi)
	c.mu.Lock()
	e, ok := c.m[dir]
	c.mu.Unlock()
	if ok && e.key == key {
		return e.sp, nil
	}
	sp, err := readSpec(dir)
	if err != nil || sp == nil {
		return sp, err
	}
	c.store(dir, key, sp)
	return sp, nil
}

// put caches the spec Start just wrote (under the trial lock) at dir.
func (c *specCache) put(dir string, sp *spec) {
	var fi syscall.Stat_t
	if syscall.Stat(filepath.Join(dir, specFile), &fi) != nil {
		return
	}
	c.store(dir, specKey(&fi), sp)
}

func specKey(fi *syscall.Stat_t) [4]int64 {
	return [4]int64{int64(fi.Ino), fi.Size, fi.Mtim.Nano(), fi.Ctim.Nano()}
}

func (c *specCache) store(dir string, key [4]int64, sp *spec) {
	owner := sp.owner()
	c.mu.Lock()
	if len(c.m) >= specCacheMax {
		clear(c.m)
	}
	c.m[dir] = cachedSpec{key: key, sp: sp, owner: owner}
	c.mu.Unlock()
}

// observe classifies an attempt from its files and the process table.
func observe(dir string, sp *spec, st *status) providers.Observation {
	o := providers.Observation{
		TrialID: sp.TrialID, Experiment: sp.Experiment, Exists: true, Lineage: sp.Lineage, Owner: sp.owner(),
	}
	if st == nil || st.Attempt != sp.Attempt {
		// Launched (spec written) but the supervisor never recorded
		// this attempt; Start holds the trial lock while it waits, so
		// nobody is about to.
		o.Phase = providers.PhaseLost
		o.Reason = "the supervisor never started the trial"
		o.Handle = handle(dir, nil)
		return o
	}
	o.Handle = handle(dir, st)
	o.StartedAt = st.StartedAt
	o.EndedAt = st.EndedAt
	if st.ExitCode != nil {
		c := *st.ExitCode
		o.ExitCode = &c
	}
	if st.copyOf != "" {
		o.Phase = providers.PhaseLost
		o.Reason = "this trial directory is a copy of " + st.copyOf + " (a copied working copy): the processes its status names run that trial, not this one"
		return o
	}
	switch st.State {
	case stateEnded:
		o.Reason = st.Reason
		switch st.Outcome {
		case outcomeStopped, outcomeMaxDuration:
			o.Phase = providers.PhaseKilled
			o.PastMaxDuration = st.Outcome == outcomeMaxDuration
		case outcomeUnrecorded:
			o.Phase = providers.PhaseSucceeded
		case outcomeExited:
			if st.ExitCode != nil && *st.ExitCode == 0 {
				o.Phase = providers.PhaseSucceeded
			} else {
				o.Phase = providers.PhaseFailed
			}
		default: // signaled, start_failed
			o.Phase = providers.PhaseFailed
		}
	case stateStarting:
		if alive(st.SupervisorPID, st.SupervisorStart) {
			o.Phase = providers.PhasePending
		} else {
			o.Phase = providers.PhaseLost
			o.Reason = "the supervisor vanished before starting the trial"
		}
	default:
		switch {
		case alive(st.SupervisorPID, st.SupervisorStart):
			o.Phase = providers.PhaseRunning
		case alive(st.PID, st.StartTime):
			o.Phase = providers.PhaseRunning
			o.Reason = "running without its supervisor (its exit status will not be known)"
		default:
			o.Phase = providers.PhaseLost
			o.Reason = "the trial and its supervisor vanished without recording an exit"
		}
	}
	return o
}

// metricSink collects what a Read returns: every final result, the
// intermediate results up to providers.MaxIntermediate for the trial
// (counting those earlier Reads returned), a few unreadable records.
type metricSink struct {
	out              []providers.Metric
	kept, dropped    int64
	garbage, skipped int
}

func (s *metricSink) add(recs []providers.Metric) {
	for _, m := range recs {
		switch {
		case m.Garbage != "":
			if s.garbage < maxGarbage {
				s.out = append(s.out, m)
			}
			s.garbage++
		case m.Type == trialproto.TypePeriodical:
			if s.kept >= providers.MaxIntermediate {
				s.dropped++
				continue
			}
			s.kept++
			s.out = append(s.out, m)
		default:
			s.out = append(s.out, m)
		}
	}
}

// skipDropped counts, without decoding them, the intermediate records at
// the start of b once the cap is reached (a flood of them is then cheap),
// and returns how many bytes it consumed; 0 hands b to the parser.
func (s *metricSink) skipDropped(b []byte) int {
	if s.kept < providers.MaxIntermediate {
		return 0
	}
	off := 0
	for {
		n := walkOne(b[off:])
		if n <= 0 {
			return off
		}
		rec := b[off : off+n]
		if !bytes.Contains(rec, []byte(`"PERIODICAL"`)) || bytes.Contains(rec, []byte(`"FINAL"`)) || bytes.Contains(rec, []byte(`"garbage"`)) {
			return off
		}
		s.dropped++
		off += n
	}
}

// note says what the caps dropped so far ("" when nothing).
func capNote(dropped int64) string {
	if dropped == 0 {
		return ""
	}
	return fmt.Sprintf("%d intermediate results past the first %d were not kept (the limit per trial)", dropped, providers.MaxIntermediate)
}

// overlongNote says how many metric lines on stdout were too long to be
// read ("" when none): a trial whose final result came on another line
// succeeds, and its note is where this shows.
func overlongNote(n int64) string {
	switch n {
	case 0:
		return ""
	case 1:
		return fmt.Sprintf("a metric line longer than %d bytes was not read", maxLine)
	}
	return fmt.Sprintf("%d metric lines longer than %d bytes were not read", n, maxLine)
}

// readMetrics returns the records past off and the new offsets.
func readMetrics(dir string, attempt int, off map[string]int64) ([]providers.Metric, map[string]int64, error) {
	sink := &metricSink{kept: off[offKept], dropped: off[offDropped]}
	_, noff, err := trialproto.ReadNNIAttempts(attempt, off, func(a int, current bool, from int64) ([]providers.Metric, int64, error) {
		p := filepath.Join(dir, nniMetricsFile)
		if !current {
			p += "." + strconv.Itoa(a)
		}
		stamps := &nniStamps{path: filepath.Join(dir, nniStampsPrefix+strconv.Itoa(a)), from: from}
		next, err := readRecords(p, from, sink, stamps.at) // the records go to sink
		return nil, next, err
	})
	if err != nil {
		return nil, nil, err
	}
	newStdout, err := readRecords(filepath.Join(dir, stdoutMetrics), off[offStdout], sink, nil)
	if err != nil {
		return nil, nil, err
	}
	if sink.garbage > maxGarbage {
		sink.out = append(sink.out, providers.Metric{ParameterID: -1, Garbage: fmt.Sprintf("%d more unreadable metric records", sink.garbage-maxGarbage)})
	}
	noff[offStdout], noff[offKept] = newStdout, sink.kept
	if sink.dropped > 0 {
		noff[offDropped] = sink.dropped
	}
	return sink.out, noff, nil
}

// readRecords parses the complete records of a metric file from off to its
// end, metricChunk bytes at a time, into sink, and returns the offset past
// the last complete record. A file shorter than off was truncated (or
// replaced): it is read from 0. With seen, a record without a time of its
// own gets seen(the offset just past it): when the supervisor saw it.
func readRecords(path string, off int64, sink *metricSink, seen func(end int64) time.Time) (int64, error) {
	f, err := fsx.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if fsx.IsNotRegular(err) {
		// A trial may leave anything in its metric file's place (a FIFO
		// would block a reader for ever): its records are ignored and
		// the trial's reason says why.
		sink.out = append(sink.out, providers.Metric{ParameterID: -1, Garbage: notRegularNote(path, err)})
		return off, nil
	}
	if err != nil {
		return off, fmt.Errorf("read metrics: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return off, fmt.Errorf("read metrics: %w", err)
	}
	size := fi.Size()
	if size < off {
		off = 0
	}
	var buf []byte
	for off < size {
		n := min(size-off, metricChunk)
		if int64(cap(buf)) < n {
			buf = make([]byte, n)
		}
		k, err := f.ReadAt(buf[:n], off)
		if err != nil && !errors.Is(err, io.EOF) {
			return off, fmt.Errorf("read metrics: %w", err)
		}
		consumed := sink.skipDropped(buf[:k])
		if consumed == 0 {
			var recs []providers.Metric
			var ends []int
			recs, ends, consumed = trialproto.ParseMetricRecordsEnds(buf[:k])
			if seen != nil {
				for i := range recs {
					if recs[i].Time.IsZero() {
						recs[i].Time = seen(off + int64(ends[i]))
					}
				}
			}
			sink.add(recs)
		}
		if consumed == 0 {
			break // an incomplete record at the end: the next Read
		}
		off += int64(consumed)
	}
	return off, nil
}

// nniStamps reads the supervisor's stamps of an NNI metric file
// (nniFollower) once, when a record without a time asks for one, and only
// the tail that covers offsets from on: the file grows by a line per
// tailInterval that saw records, so a long trial's is not read whole at
// every Read.
type nniStamps struct {
	path   string
	from   int64
	loaded bool
	ends   []int64
	times  []time.Time
}

// maxStampsRead bounds what one Read reads of a stamps file.
const maxStampsRead = 4 << 20

// at returns when the supervisor first saw the record ending at end: the
// time of the first stamp at or past end; zero when none covers it (the
// Read got there before the supervisor's next poll, or the attempt had no
// supervisor), which the caller stamps with its own clock.
func (s *nniStamps) at(end int64) time.Time {
	if !s.loaded {
		s.loaded = true
		s.load()
	}
	i := sort.Search(len(s.ends), func(i int) bool { return s.ends[i] >= end })
	if i == len(s.ends) {
		return time.Time{}
	}
	return s.times[i]
}

func (s *nniStamps) load() {
	f, err := fsx.Open(s.path)
	if err != nil {
		return
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return
	}
	size := fi.Size()
	var data []byte
	for n := int64(64 << 10); ; n *= 2 {
		n = min(n, size, maxStampsRead)
		data = make([]byte, n)
		k, err := f.ReadAt(data, size-n)
		if err != nil && !errors.Is(err, io.EOF) {
			return
		}
		data = data[:k]
		if n < size {
			// Drop the first, maybe partial, line; read more unless
			// the tail already reaches back to s.from.
			if i := bytes.IndexByte(data, '\n'); i >= 0 {
				data = data[i+1:]
			}
			if first, _, ok := parseStamp(data); (!ok || first > s.from) && n < size && n < maxStampsRead {
				continue
			}
		}
		break
	}
	for len(data) > 0 {
		line := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			break // a line being written
		}
		if end, t, ok := parseStamp(line); ok && (len(s.ends) == 0 || end > s.ends[len(s.ends)-1]) {
			s.ends = append(s.ends, end)
			s.times = append(s.times, t)
		}
	}
}

// parseStamp reads "END_OFFSET UNIX_MICROSECONDS" at the start of b.
func parseStamp(b []byte) (int64, time.Time, bool) {
	if i := bytes.IndexByte(b, '\n'); i >= 0 {
		b = b[:i]
	}
	a, c, ok := bytes.Cut(b, []byte(" "))
	if !ok {
		return 0, time.Time{}, false
	}
	end, err1 := strconv.ParseInt(string(a), 10, 64)
	us, err2 := strconv.ParseInt(string(c), 10, 64)
	if err1 != nil || err2 != nil || end < 0 || us <= 0 {
		return 0, time.Time{}, false
	}
	return end, time.UnixMicro(us).UTC(), true
}

// List returns every trial directory of experiment under Root with its
// observation (no metrics), sorted by trial id; trials the state lost are
// found this way.
func (l *Local) List(ctx context.Context, experiment string) ([]providers.Observation, error) {
	return l.list(ctx, experiment, nil)
}

// ListUnknown is List less the trials known reports: their directories
// are seen in the experiment's directory listing and not opened (a
// refresh over a long history costs one listing, not a read of every
// finished trial).
func (l *Local) ListUnknown(ctx context.Context, experiment string, known func(trialID string) bool) ([]providers.Observation, error) {
	return l.list(ctx, experiment, known)
}

func (l *Local) list(ctx context.Context, experiment string, known func(string) bool) ([]providers.Observation, error) {
	if err := checkName("experiment", experiment); err != nil {
		return nil, err
	}
	ents, err := readDirUnsorted(filepath.Join(l.cfg.Root, experiment))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list trials of %s: %w", experiment, err)
	}
	var out []providers.Observation
	seen := map[string]*listEntry{}
	for _, e := range ents {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if !e.IsDir() || checkName("trial id", e.Name()) != nil || known != nil && known(e.Name()) {
			continue
		}
		dir := filepath.Join(l.cfg.Root, experiment, e.Name())
		sp, st := l.listc.lookup(seen, experiment, e.Name(), dir)
		if sp == nil {
			continue
		}
		out = append(out, observe(dir, sp, st))
	}
	l.listc.store(experiment, seen)
	sort.Slice(out, func(i, j int) bool { return out[i].TrialID < out[j].TrialID })
	return out, nil
}

// readDirUnsorted is os.ReadDir without its sort by name (List sorts what
// it returns; the listing of a long history is mostly skipped).
func readDirUnsorted(dir string) ([]fs.DirEntry, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.ReadDir(-1)
}

// notRegularNote says, for a trial's reason, that its metric file at path
// is not a regular file and was not read.
func notRegularNote(path string, err error) string {
	name := filepath.Base(path)
	if d := filepath.Base(filepath.Dir(path)); d == nniDir {
		name = d + "/" + name
	}
	var nr *fsx.NotRegularError
	if errors.As(err, &nr) {
		err = &fsx.NotRegularError{Path: name, Mode: nr.Mode}
	}
	return fmt.Sprintf("%v: its metrics were ignored", err)
}
