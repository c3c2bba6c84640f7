package remote

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/pkg/sftp"
	"golang.org/x/crypto/ssh"

	"github.com/trialform/trialform/internal/fsx"
	"github.com/trialform/trialform/internal/procfs"
	"github.com/trialform/trialform/providers"
	"github.com/trialform/trialform/providers/trialproto"
)

// Names in a trial directory.
const (
	specFile   = "spec.json"
	statusFile = "status"
	stdoutFile = "stdout"
	ticksFile  = "ticks" // the supervisor's record of output sizes
	// tickTimesFile: the sizes with the files' modification times, to
	// date results that carry no time of their own (tickTimes).
	tickTimesFile = "tick-times"
	stderrFile    = "stderr"
	nniMetrics    = ".nni/metrics"
)

// spec is the trial's record on the machine, written before each launch:
// the ownership marker.
type spec struct {
	Version    int    `json:"version"`
	Experiment string `json:"experiment"`
	TrialID    string `json:"trial_id"`
	Lineage    string `json:"lineage"`
	// ExperimentID, Generation and ParamsDigest complete the ownership
	// marker (providers.Owner).
	ExperimentID string    `json:"experiment_id,omitempty"`
	Generation   int       `json:"generation,omitempty"`
	ParamsDigest string    `json:"params_digest,omitempty"`
	Attempt      int       `json:"attempt"`
	ParameterID  int       `json:"parameter_id"`
	MetricRegex  string    `json:"metric_regex,omitempty"`
	Machine      string    `json:"machine"`
	GPUs         []int     `json:"gpus,omitempty"`
	CreatedAt    time.Time `json:"created_at"`
}

func (sp *spec) owner() providers.Owner {
	return providers.Owner{Lineage: sp.Lineage, ExperimentID: sp.ExperimentID, Generation: sp.Generation, ParamsDigest: sp.ParamsDigest}
}

// status is what the sh supervisor records (key=value lines).
type status struct {
	State     string // running, ended
	Attempt   int
	SupPID    int
	SupStart  string
	PID       int
	PIDStart  string
	GPUs      string
	Started   *time.Time
	Ended     *time.Time
	StdoutOff int64
	Exit      *int
	Outcome   string // exited, signaled, stopped, max_duration
	Reason    string
}

func parseStatus(b []byte) *status {
	st := &status{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), "=")
		if !ok {
			continue
		}
		switch k {
		case "state":
			st.State = v
		case "attempt":
			st.Attempt, _ = strconv.Atoi(v)
		case "sup_pid":
			st.SupPID, _ = strconv.Atoi(v)
		case "sup_start":
			st.SupStart = v
		case "pid":
			st.PID, _ = strconv.Atoi(v)
		case "pid_start":
			st.PIDStart = v
		case "gpus":
			st.GPUs = v
		case "started":
			st.Started = parseEpoch(v)
		case "ended":
			st.Ended = parseEpoch(v)
		case "stdout_off":
			st.StdoutOff, _ = strconv.ParseInt(v, 10, 64)
		case "exit":
			if c, err := strconv.Atoi(v); err == nil {
				st.Exit = &c
			}
		case "outcome":
			st.Outcome = v
		case "reason":
			st.Reason = strings.TrimSpace(v)
		}
	}
	if st.State == "" || st.Attempt == 0 {
		return nil
	}
	return st
}

// parseEpoch reads `date +%s.%N` ("1700000000.123456789"; a date without
// %N leaves "1700000000.N").
func parseEpoch(s string) *time.Time {
	sec, frac, _ := strings.Cut(s, ".")
	n, err := strconv.ParseInt(sec, 10, 64)
	if err != nil {
		return nil
	}
	var ns int64
	if len(frac) == 9 {
		ns, _ = strconv.ParseInt(frac, 10, 64)
	}
	t := time.Unix(n, ns).UTC()
	return &t
}

// openRegular opens p over SFTP for reading if it is a regular file, and
// refuses anything else with a *fsx.NotRegularError: the SFTP server opens
// a file with a blocking open(2), so a FIFO a trial left in a file's place
// would block it, and every request of the connection behind it, for
// ever. (A file swapped between the Stat and the Open can still block the
// server; SFTP has no way to open a file non-blocking.)
func openRegular(s *sftp.Client, p string) (*sftp.File, error) {
	fi, err := s.Stat(p)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, &fsx.NotRegularError{Path: p, Mode: fi.Mode()}
	}
	return s.Open(p)
}

// readSmall reads a whole small file over SFTP; a missing file is nil, nil.
func readSmall(fs *rfs, p string) (b []byte, err error) {
	err = fs.do("SFTP read of "+p, func(s *sftp.Client) error {
		b, err = readSmallFrom(s, p)
		return err
	})
	return b, err
}

func readSmallFrom(s *sftp.Client, p string) ([]byte, error) {
	f, err := openRegular(s, p)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, err
	}
	defer f.Close()
	var buf bytes.Buffer
	b := make([]byte, 32<<10)
	for {
		n, err := f.Read(b)
		buf.Write(b[:n])
		if errors.Is(err, io.EOF) {
			return buf.Bytes(), nil
		}
		if err != nil {
			return nil, err
		}
		if buf.Len() > 4<<20 {
			return nil, fmt.Errorf("%s is larger than 4 MB", p)
		}
	}
}

// readFrom reads p from off (at most max bytes). A file shorter than off
// was replaced: it is read from 0. It returns the data and where it
// starts.
func readFrom(fs *rfs, p string, off, max int64) (b []byte, at int64, err error) {
	err = fs.do("SFTP read of "+p, func(s *sftp.Client) error {
		b, at, err = readFromAt(s, p, off, max)
		return err
	})
	return b, at, err
}

func readFromAt(s *sftp.Client, p string, off, max int64) ([]byte, int64, error) {
	f, err := openRegular(s, p)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, 0, nil
		}
		return nil, off, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, off, err
	}
	if fi.Size() < off {
		off = 0
	}
	n := fi.Size() - off
	if n > max {
		n = max
	}
	if n <= 0 {
		return nil, off, nil
	}
	buf := make([]byte, n)
	k, err := f.ReadAt(buf, off)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, off, err
	}
	return buf[:k], off, nil
}

// trialFiles are what a trial's directory says about its current attempt.
type trialFiles struct {
	m   *machine
	c   *ssh.Client
	s   *rfs
	dir string
	sp  *spec
	st  *status
}

// load reads spec.json and status of dir; sp is nil when the trial does
// not exist there.
func (m *machine) load(ctx context.Context, dir string) (*trialFiles, error) {
	s, err := m.fs(ctx)
	if err != nil {
		return nil, err
	}
	c := s.c
	tf := &trialFiles{m: m, c: c, s: s, dir: dir}
	b, err := readSmall(s, path.Join(dir, specFile))
	if err != nil {
		return nil, m.sftpErr(c, err)
	}
	if b == nil {
		return tf, nil
	}
	var sp spec
	if err := json.Unmarshal(b, &sp); err != nil {
		return nil, fmt.Errorf("machine %s: %s/%s is not valid: %w", m.key, dir, specFile, err)
	}
	tf.sp = &sp
	b, err = readSmall(s, path.Join(dir, statusFile))
	if err != nil {
		return nil, m.sftpErr(c, err)
	}
	tf.st = parseStatus(b)
	return tf, nil
}

// procStart reads the start time of pid on the machine ("" if no such
// process), from /proc over SFTP.
func procStart(s *rfs, pid int) string {
	if pid <= 0 {
		return ""
	}
	b, err := readSmall(s, "/proc/"+strconv.Itoa(pid)+"/stat")
	if err != nil || b == nil {
		return ""
	}
	st, err := procfs.Parse(pid, b)
	if err != nil || st.Gone() {
		return ""
	}
	return strconv.FormatUint(st.Start, 10)
}

// observe classifies the current attempt.
func (tf *trialFiles) observe() providers.Observation {
	sp, st := tf.sp, tf.st
	o := providers.Observation{TrialID: sp.TrialID, Experiment: sp.Experiment, Exists: true, Lineage: sp.Lineage, Owner: sp.owner()}
	o.Handle = tf.handle()
	if st == nil || st.Attempt != sp.Attempt {
		o.Phase = providers.PhaseLost
		o.Reason = "the supervisor never started the trial on " + tf.m.key
		return o
	}
	o.StartedAt, o.EndedAt = st.Started, st.Ended
	if st.Exit != nil {
		c := *st.Exit
		o.ExitCode = &c
	}
	if st.State == "ended" {
		o.Reason = st.Reason
		switch st.Outcome {
		case "stopped", "max_duration":
			o.Phase = providers.PhaseKilled
			o.PastMaxDuration = st.Outcome == "max_duration"
		case "exited":
			if st.Exit != nil && *st.Exit == 0 {
				o.Phase = providers.PhaseSucceeded
			} else {
				o.Phase = providers.PhaseFailed
			}
		default:
			o.Phase = providers.PhaseFailed
		}
		return o
	}
	switch {
	case st.SupStart != "" && procStart(tf.s, st.SupPID) == st.SupStart:
		o.Phase = providers.PhaseRunning
	case st.PIDStart != "" && procStart(tf.s, st.PID) == st.PIDStart:
		o.Phase = providers.PhaseRunning
		o.Reason = "running without its supervisor (its exit status will not be known)"
	default:
		// The supervisor may have recorded the end and exited between
		// our reading the status and looking for its process.
		if b, err := readSmall(tf.s, path.Join(tf.dir, statusFile)); err == nil {
			if st2 := parseStatus(b); st2 != nil && st2.State == "ended" && st2.Attempt == sp.Attempt {
				tf.st = st2
				return tf.observe()
			}
		}
		o.Phase = providers.PhaseLost
		o.Reason = "the trial and its supervisor vanished on " + tf.m.key + " without recording an exit (machine rebooted?)"
	}
	return o
}

// handle is the provider handle of the trial's current attempt.
func (tf *trialFiles) handle() providers.Handle {
	h := providers.Handle{"machine": tf.m.key, "host": tf.m.cfg.Host, "dir": tf.dir}
	if tf.sp != nil {
		h["attempt"] = strconv.Itoa(tf.sp.Attempt)
		if len(tf.sp.GPUs) > 0 {
			h["gpus"] = joinInts(tf.sp.GPUs)
		}
	}
	if st := tf.st; st != nil && tf.sp != nil && st.Attempt == tf.sp.Attempt {
		h["supervisor_pid"] = strconv.Itoa(st.SupPID)
		if st.PID > 0 {
			h["pid"] = strconv.Itoa(st.PID)
			h["pgid"] = strconv.Itoa(st.PID)
		}
	}
	return h
}

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ",")
}

// Offset keys of Observation.MetricsOffset.
const (
	// trialproto.OffsetAttempt and OffsetNNI: where NNI's metric files
	// (.nni/metrics, archived as .nni/metrics.N) were read to.
	offStdout     = "stdout"      // byte offset in stdout (all attempts)
	offSeq        = "seq"         // next sequence of stdout intermediate results
	offSeqAttempt = "seq_attempt" // attempt "seq" counts for
	offFinal      = "final"       // attempt whose regex final result was settled
	offOrder      = "order"       // attempt whose last final result was ordered
	offOutFinal   = "out_final"   // end in stdout of the attempt's last final line
	offOutFinalA  = "out_final_a" // attempt offOutFinal is for
	offSkip       = "skip"        // 1: stdout is read to within an overlong line
)

const maxMetricRead = 64 << 20

// maxLine is the longest stdout line read for metrics, as on local: a
// longer metric line is not read, and a Garbage metric says so.
const maxLine = 1 << 20

// overlongMark stands for the text of a line longer than maxLine in
// stdout.kept (supervise.sh's keep_awk), followed by its first 4096 bytes.
var overlongMark = []byte("\x1etrialform-overlong\x1e")

// overlong is the Garbage metric of a metric line longer than maxLine
// (ok false when it is no metric line).
func overlong(parameterID int, line []byte) (providers.Metric, bool) {
	head := line
	if bytes.HasPrefix(head, overlongMark) {
		head = head[len(overlongMark):] // its beginning was in the freed middle
	}
	if i := bytes.Index(head, overlongMark); i >= 0 {
		head = head[:i]
	}
	head = head[:min(len(head), 4096)]
	if !trialproto.IsMetricLine(head) {
		return providers.Metric{}, false
	}
	return providers.Metric{ParameterID: parameterID, Garbage: fmt.Sprintf("a metric line longer than %d bytes was not read (%q...)", maxLine, head[:min(len(head), 40)])}, true
}

// metrics returns the metrics past off and the new offsets: NNI's file
// (archived attempts first), then the lines parsed from stdout.
//
// ended says the attempt will write no more (it ended or was lost: a last
// line without a newline counts); settled says it ended for good (not
// lost), so the synthetic final result of metric_regex is decided now.
func (tf *trialFiles) metrics(off map[string]int64, ended, settled, succeeded bool) ([]providers.Metric, map[string]int64, error) {
	sp, st := tf.sp, tf.st
	attempt := sp.Attempt
	next := map[string]int64{}
	for k, v := range off {
		next[k] = v
	}
	// The supervisor's dates of the current attempt's output, read when a
	// result without a time of its own needs one.
	tt := &tickTimes{s: tf.s, path: path.Join(tf.dir, tickTimesFile)}
	out, nniNext, err := trialproto.ReadNNIAttempts(attempt, off, func(a int, current bool, from int64) ([]providers.Metric, int64, error) {
		p := path.Join(tf.dir, nniMetrics)
		if !current {
			p += "." + strconv.Itoa(a)
		}
		data, at, err := readFrom(tf.s, p, from, maxMetricRead)
		var nr *fsx.NotRegularError
		if errors.As(err, &nr) {
			// Its records are ignored and the trial's reason says why.
			name := nniMetrics
			if !current {
				name += "." + strconv.Itoa(a)
			}
			return []providers.Metric{{ParameterID: -1, Garbage: fmt.Sprintf("%v: its metrics were ignored", &fsx.NotRegularError{Path: name, Mode: nr.Mode})}}, from, nil
		}
		if err != nil {
			return nil, 0, tf.m.sftpErr(tf.c, err)
		}
		recs, ends, consumed := trialproto.ParseMetricRecordsEnds(data)
		if current {
			for i := range recs {
				if recs[i].Time.IsZero() {
					recs[i].Time = tt.at(false, at+int64(ends[i]))
				}
			}
		}
		return recs, at + int64(consumed), nil
	})
	if err != nil {
		return nil, nil, err
	}
	for k, v := range nniNext {
		next[k] = v
	}

	var re *regexp.Regexp
	if sp.MetricRegex != "" {
		re, _ = regexp.Compile(sp.MetricRegex)
	}
	curStart := int64(-1)
	if st != nil && st.Attempt == attempt {
		curStart = st.StdoutOff
	}
	segs, at, partial, err := tf.stdoutFrom(off[offStdout], maxMetricRead)
	if err != nil {
		return nil, nil, tf.m.sftpErr(tf.c, err)
	}
	if at < off[offStdout] { // replaced: count afresh
		next[offSeq], next[offSeqAttempt] = 0, 0
	}
	pos := at
	col := trialproto.Collector{ParameterID: sp.ParameterID, Regex: re}
	// skip: within an overlong line, whose rest is not read.
	skip := next[offSkip] == 1 && at >= off[offStdout]
	var data []byte
	if len(segs) > 0 {
		j := join(segs)
		data = j.data
	lines:
		for i := 0; i < len(j.data); {
			k := bytes.IndexByte(j.data[i:], '\n')
			var line []byte
			lineAt := j.at(i)
			over := false
			if k < 0 {
				rest := j.data[i:]
				switch {
				case skip:
				case len(rest) > maxLine:
					over, skip = true, true
				case partial || !ended:
					break lines // an unfinished line
				}
				line = rest
				i = len(j.data)
				pos = j.at(i)
			} else {
				line = j.data[i : i+k]
				pos = j.at(i+k) + 1
				i += k + 1
				if skip {
					skip = false // the end of an overlong line
					data = j.data[i:]
					continue
				}
				over = len(line) > maxLine || bytes.Contains(line, overlongMark)
			}
			data = j.data[i:]
			if skip && !over {
				continue
			}
			if curStart >= 0 && lineAt >= curStart && next[offSeqAttempt] != int64(attempt) {
				next[offSeq], next[offSeqAttempt] = 0, int64(attempt)
			}
			col.Seq = int(next[offSeq])
			var m providers.Metric
			var ok bool
			if over {
				m, ok = overlong(sp.ParameterID, line)
			} else {
				m, ok = col.Line(string(line))
			}
			if ok {
				if m.Time.IsZero() && curStart >= 0 && lineAt >= curStart {
					m.Time = tt.at(true, pos)
				}
				out = append(out, m)
				if m.Type == trialproto.TypeFinal && m.Garbage == "" && curStart >= 0 && lineAt >= curStart {
					next[offOutFinal], next[offOutFinalA] = pos, int64(attempt)
				}
			}
			next[offSeq] = int64(col.Seq)
		}
	}
	if skip {
		next[offSkip] = 1
	} else {
		delete(next, offSkip)
	}
	if partial {
		data = []byte{0} // more to read: nothing is settled yet
	}
	next[offStdout] = pos

	if ended && settled && next[offOrder] != int64(attempt) && pos >= at && len(data) == 0 {
		next[offOrder] = int64(attempt)
		if next[offOutFinalA] == int64(attempt) {
			m, ok, err := tf.laterNNIFinal(next[offOutFinal])
			if err != nil {
				return nil, nil, err
			}
			if ok {
				out = append(out, m)
			}
		}
	}
	if ended && settled && re != nil && next[offFinal] != int64(attempt) && pos >= at && len(data) == 0 {
		next[offFinal] = int64(attempt)
		if succeeded && curStart >= 0 {
			if m, ok, err := tf.regexFinal(re, curStart); err != nil {
				return nil, nil, err
			} else if ok {
				out = append(out, m)
			}
		}
	}
	return out, next, nil
}

// tickTimes reads the supervisor's tick-times of the current attempt
// (supervise.sh): lines "STDOUT_SIZE NNI_SIZE STDOUT_MTIME NNI_MTIME",
// one per check (100 ms) that saw either file grow. A result without a
// time of its own that ends at offset E of a file is dated by the first
// line whose size of that file reaches E: the last write that line saw,
// which wrote (at least) the end of the result. Only the file's tail is
// read (maxTickTimesRead), once per Read and only when needed: results
// past what it covers stay undated (refresh dates them when it reads them).
type tickTimes struct {
	s      *rfs
	path   string
	loaded bool
	outs   []tickTime
	nnis   []tickTime
}

type tickTime struct {
	size int64
	t    time.Time
}

const maxTickTimesRead = 1 << 20

// at dates the result ending at end of stdout (out) or NNI's file; zero
// when the ticks do not cover it.
func (tt *tickTimes) at(out bool, end int64) time.Time {
	if !tt.loaded {
		tt.loaded = true
		tt.load()
	}
	ts := tt.nnis
	if out {
		ts = tt.outs
	}
	i := sort.Search(len(ts), func(i int) bool { return ts[i].size >= end })
	if i == len(ts) {
		return time.Time{}
	}
	return ts[i].t
}

func (tt *tickTimes) load() {
	_ = tt.s.do("SFTP read of "+tt.path, func(s *sftp.Client) error {
		tt.loadFrom(s)
		return nil
	})
}

func (tt *tickTimes) loadFrom(s *sftp.Client) {
	f, err := openRegular(s, tt.path)
	if err != nil {
		return
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return
	}
	n := min(fi.Size(), maxTickTimesRead)
	data := make([]byte, n)
	k, err := f.ReadAt(data, fi.Size()-n)
	if err != nil && !errors.Is(err, io.EOF) {
		return
	}
	data = data[:k]
	if n < fi.Size() { // the first line may be cut
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			data = data[i+1:]
		}
	}
	add := func(ts []tickTime, size int64, sec string) []tickTime {
		f, err := strconv.ParseFloat(sec, 64)
		if err != nil {
			return ts
		}
		t := trialproto.UnixTime(&f)
		if t.IsZero() || (len(ts) > 0 && size <= ts[len(ts)-1].size) {
			return ts // no time, or the size did not grow
		}
		return append(ts, tickTime{size, t})
	}
	lines := strings.Split(string(data), "\n")
	lines = lines[:len(lines)-1] // "" after the last newline, or a line being written
	for _, line := range lines {
		f := strings.Fields(line)
		if len(f) != 4 {
			continue
		}
		so, err1 := strconv.ParseInt(f[0], 10, 64)
		sn, err2 := strconv.ParseInt(f[1], 10, 64)
		if err1 != nil || err2 != nil {
			continue
		}
		tt.outs = add(tt.outs, so, f[2])
		tt.nnis = add(tt.nnis, sn, f[3])
	}
}

// laterNNIFinal returns the attempt's last final result in NNI's file
// when the supervisor's ticks say it was written after the last one on
// stdout (which ends at outEnd), so that the caller reports it again,
// last: the last final result a refresh sees is the trial's. Within one
// tick stdout counts as later, as on the local platform.
func (tf *trialFiles) laterNNIFinal(outEnd int64) (providers.Metric, bool, error) {
	nni, _, err := readFrom(tf.s, path.Join(tf.dir, nniMetrics), 0, maxMetricRead)
	if fsx.IsNotRegular(err) {
		nni, err = nil, nil // ignored; metrics() says why
	}
	if err != nil {
		return providers.Metric{}, false, tf.m.sftpErr(tf.c, err)
	}
	var final providers.Metric
	nniEnd := int64(-1)
	// Walk the records one by one (by their "ME" + 6-digit length
	// headers) for the end of the last final result.
	for off := 0; off+8 <= len(nni) && string(nni[off:off+2]) == "ME"; {
		l, err := strconv.Atoi(string(nni[off+2 : off+8]))
		if err != nil || l < 0 || off+8+l > len(nni) {
			break
		}
		recs, _, _ := trialproto.ParseMetricRecords(nni[off : off+8+l])
		off += 8 + l
		for _, m := range recs {
			if m.Type == trialproto.TypeFinal && m.Garbage == "" {
				final, nniEnd = m, int64(off)
			}
		}
	}
	if nniEnd < 0 {
		return providers.Metric{}, false, nil
	}
	ticks, err := readSmall(tf.s, path.Join(tf.dir, ticksFile))
	if err != nil || ticks == nil {
		return providers.Metric{}, false, err
	}
	tOut, tNNI := -1, -1
	for i, line := range strings.Split(string(ticks), "\n") {
		f := strings.Fields(line)
		if len(f) != 2 {
			continue
		}
		so, err1 := strconv.ParseInt(f[0], 10, 64)
		sn, err2 := strconv.ParseInt(f[1], 10, 64)
		if err1 != nil || err2 != nil {
			continue
		}
		if tOut < 0 && so >= outEnd {
			tOut = i
		}
		if tNNI < 0 && sn >= nniEnd {
			tNNI = i
		}
	}
	if tOut < 0 || tNNI < 0 || tNNI <= tOut {
		return providers.Metric{}, false, nil
	}
	return final, true, nil
}

// regexFinal is the synthetic FINAL of a trial that reported its metrics
// only through metric_regex lines: the last value of each name, unless the
// attempt reported a final result itself.
func (tf *trialFiles) regexFinal(re *regexp.Regexp, from int64) (providers.Metric, bool, error) {
	segs, _, _, err := tf.stdoutFrom(from, maxMetricRead)
	if err != nil {
		return providers.Metric{}, false, tf.m.sftpErr(tf.c, err)
	}
	var data []byte
	if len(segs) > 0 {
		data = join(segs).data
	}
	col := trialproto.Collector{ParameterID: tf.sp.ParameterID, Regex: re}
	for _, line := range strings.Split(string(data), "\n") {
		if len(line) <= maxLine && !strings.Contains(line, string(overlongMark)) {
			col.Line(line)
		}
	}
	if col.Final {
		return providers.Metric{}, false, nil
	}
	nni, _, err := readFrom(tf.s, path.Join(tf.dir, nniMetrics), 0, maxMetricRead)
	if fsx.IsNotRegular(err) {
		nni, err = nil, nil // ignored; metrics() says why
	}
	if err != nil {
		return providers.Metric{}, false, tf.m.sftpErr(tf.c, err)
	}
	m, ok := col.Finish(trialproto.HasFinal(nni))
	return m, ok, nil
}

// runScript is the trial's run.sh: the environment, the working dir (the
// trial's copy of the code dir) and the command, every value quoted.
func runScript(req providers.StartRequest, m *machine, dir, lib string, gpus []int, attempt int) (string, error) {
	env := trialproto.Env(req, dir, path.Join(dir, "output"), path.Join(dir, "params.json"))
	names := make([]string, 0, len(env))
	for k := range env {
		if !validEnvName(k) {
			return "", providers.Permanent(fmt.Errorf("trial env name %q is not a valid environment variable name (letters, digits, _)", k))
		}
		names = append(names, k)
	}
	sort.Strings(names)
	var b strings.Builder
	fmt.Fprintf(&b, "#!/bin/sh\n# written by trialform for attempt %d of trial %s\n", attempt, shq(req.TrialID))
	for _, k := range names {
		if k == "PATH" || k == "PYTHONPATH" {
			continue
		}
		fmt.Fprintf(&b, "%s=%s; export %s\n", k, shq(env[k]), k)
	}
	pyLib := path.Join(lib, "python")
	if v, ok := req.Env["PYTHONPATH"]; ok {
		fmt.Fprintf(&b, "PYTHONPATH=%s; export PYTHONPATH\n", shq(pyLib+":"+v))
	} else {
		fmt.Fprintf(&b, "PYTHONPATH=%s${PYTHONPATH:+:$PYTHONPATH}; export PYTHONPATH\n", shq(pyLib))
	}
	pathVal := `"$PATH"`
	if v, ok := req.Env["PATH"]; ok {
		pathVal = shq(v)
	}
	if m.cfg.PythonPath != "" {
		pathVal = shq(m.cfg.PythonPath) + ":" + pathVal
	}
	fmt.Fprintf(&b, "PATH=%s; export PATH\n", pathVal)
	if len(m.cfg.GPUIndices) > 0 {
		fmt.Fprintf(&b, "CUDA_VISIBLE_DEVICES=%s; export CUDA_VISIBLE_DEVICES\n", shq(joinInts(gpus)))
	}
	fmt.Fprintf(&b, "cd %s || exit 127\n", shq(path.Join(dir, "code")))
	if req.Shell != "" {
		fmt.Fprintf(&b, "exec /bin/sh -c %s\n", shq(req.Shell))
	} else {
		fmt.Fprintf(&b, "exec %s\n", shline(req.Args...))
	}
	return b.String(), nil
}

func validEnvName(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		if !(r == '_' || r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || i > 0 && r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}

// seconds renders a duration for sleep(1).
func seconds(d time.Duration) string {
	return strconv.FormatFloat(d.Seconds(), 'f', 3, 64)
}
