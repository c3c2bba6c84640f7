package local

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/trialform/trialform/internal/fsx"
	"github.com/trialform/trialform/providers"
	"github.com/trialform/trialform/providers/trialproto"
)

// A trial whose supervisor was killed (kill -9, the OOM killer) runs on
// without it ("running without its supervisor"); once it ends, nobody saw
// its exit status, and stdout past what the supervisor had read was not
// parsed. A trial that reported its final result before it ended did its
// work: running it again would waste it, and show its value while it
// reruns. So the first Read that finds such an attempt over (no
// supervisor, no main process) looks for a final result of this attempt:
// in NNI's file (.nni/metrics, the attempt's own), and on stdout from
// where the attempt's output starts (status.StdoutFrom). Found, it
// records the attempt's end, outcome exit_unrecorded (succeeded, with a
// reason that says its exit status is not known), after copying a final
// result the supervisor had not parsed from stdout to metrics.stdout;
// not found, the attempt stays lost and is resumed, as before. The exit
// status itself is not known: a trial that reported its final result and
// then exited non-zero counts as succeeded.
//
// This runs under the trial's exclusive lock, so one Read records it, once:
// the final result is copied only when stdout holds more final results
// than the supervisor wrote to metrics.stdout for this attempt (from
// status.MetricsFrom), so it is never returned twice.

// lostReason is the reason of an attempt that ended without its
// supervisor and without a final result.
const lostReason = "the trial ended while its supervisor was gone (killed, or it could not write the trial's status), without reporting a final result: its exit status was not recorded, and the attempt is lost"

// ended reports whether st is sp's current attempt, recorded running (not
// ended), with neither its supervisor nor its main process alive (a copy's
// record, whose processes are the original's, is not: it is lost as it is).
func ended(sp *spec, st *status) bool {
	return st != nil && st.Attempt == sp.Attempt && st.State == stateRunning && st.copyOf == "" &&
		!alive(st.SupervisorPID, st.SupervisorStart) && !alive(st.PID, st.StartTime)
}

// settleOrphan records the end of dir's attempt when it ended without its
// supervisor after reporting its final result (see above), and reports
// whether it found that final result (or an end recorded meanwhile).
func settleOrphan(ctx context.Context, dir string) (bool, error) {
	sp, st, unlock, err := openTrial(ctx, dir, syscall.LOCK_EX, false)
	if err != nil || sp == nil {
		return false, err
	}
	defer unlock()
	if st == nil || st.Attempt != sp.Attempt || st.State == stateEnded {
		return st != nil && st.State == stateEnded, nil
	}
	if !ended(sp, st) {
		return false, nil
	}
	// Nothing of the trial outlives it, as its supervisor would have made
	// sure: what it left in its group or in other sessions (found by
	// NNI_SYS_DIR) is killed before its results are looked at, so none
	// comes after.
	left := killStragglers(dir)
	found, copyFinal, err := orphanFinal(dir, sp, st)
	if err != nil {
		// Unreadable: the attempt stays lost (resumed), as without this.
		fmt.Fprintf(os.Stderr, "trialform: trial %s/%s ended without its supervisor: %v\n", sp.Experiment, sp.TrialID, err)
		return false, nil
	}
	if !found {
		return false, nil
	}
	end := orphanEndTime(dir, st)
	if copyFinal != nil {
		if copyFinal.Time.IsZero() {
			copyFinal.Time = end
		}
		f, err := fsx.OpenFile(filepath.Join(dir, stdoutMetrics), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
		if err != nil {
			return false, fmt.Errorf("trial %s/%s ended without its supervisor: record its final result: %w", sp.Experiment, sp.TrialID, err)
		}
		_, err = f.Write(trialproto.EncodeMetricRecord(*copyFinal, sp.TrialID))
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return false, fmt.Errorf("trial %s/%s ended without its supervisor: record its final result: %w", sp.Experiment, sp.TrialID, err)
		}
	}
	ns := *st
	ns.State, ns.Outcome, ns.ExitCode, ns.Signal, ns.EndedAt = stateEnded, outcomeUnrecorded, nil, "", &end
	ns.Reason = "its exit status was not recorded: its supervisor was gone when it ended (killed, or it could not write the trial's status), after reporting its final result"
	if left > 0 {
		ns.Reason += fmt.Sprintf("; %d process(es) it left running were killed", left)
	}
	log, err := openStatusLog(dir)
	if err != nil {
		return false, fmt.Errorf("trial %s/%s ended without its supervisor: record its end: %w", sp.Experiment, sp.TrialID, err)
	}
	defer log.Close()
	if err := appendStatus(log, &ns, false); err != nil {
		return false, fmt.Errorf("trial %s/%s ended without its supervisor: record its end: %w", sp.Experiment, sp.TrialID, err)
	}
	return true, nil
}

// orphanFinal looks for the attempt's final result. found: there is one
// (in NNI's file, on stdout, or already in metrics.stdout); copyFinal: the
// last one on stdout, when the supervisor did not write it to
// metrics.stdout.
func orphanFinal(dir string, sp *spec, st *status) (found bool, copyFinal *providers.Metric, err error) {
	nni := &nniFollower{path: filepath.Join(dir, nniMetricsFile)}
	nni.drain(0)
	found = nni.final != nil
	if st.StdoutFrom == nil || st.MetricsFrom == nil {
		return found, nil, nil // recorded by an older supervisor
	}
	onStdout, last, err := stdoutFinals(filepath.Join(dir, stdoutFile), *st.StdoutFrom, sp.ParameterID)
	if err != nil {
		return found, nil, err
	}
	sink := &metricSink{}
	if _, err := readRecords(filepath.Join(dir, stdoutMetrics), *st.MetricsFrom, sink, nil); err != nil {
		return found, nil, err
	}
	written := 0
	for _, m := range sink.out {
		if m.Type == trialproto.TypeFinal && m.Garbage == "" {
			written++
		}
	}
	found = found || onStdout > 0 || written > 0
	if onStdout > written {
		copyFinal = last
	}
	return found, copyFinal, nil
}

// stdoutFinals counts the final results on stdout from offset from (lines
// as the supervisor reads them) and returns the last one.
func stdoutFinals(path string, from int64, parameterID int) (int, *providers.Metric, error) {
	f, err := fsx.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil, nil
	}
	if err != nil {
		return 0, nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return 0, nil, err
	}
	if fi.Size() < from {
		return 0, nil, nil
	}
	col := trialproto.Collector{ParameterID: parameterID}
	r := bufio.NewReaderSize(io.NewSectionReader(f, from, fi.Size()-from), 64<<10)
	n := 0
	var last *providers.Metric
	var line []byte
	skipping := false
	for {
		chunk, err := r.ReadSlice('\n')
		if !skipping {
			line = append(line, chunk...)
			if len(line) > maxLine+1 {
				line, skipping = nil, true // over-long: not read, as the supervisor does
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return 0, nil, err
		}
		if !skipping && len(line) > 0 {
			l := line
			if l[len(l)-1] == '\n' {
				l = l[:len(l)-1]
			}
			if m, ok := col.Line(string(l)); ok && m.Type == trialproto.TypeFinal && m.Garbage == "" {
				m := m
				n, last = n+1, &m
			}
		}
		line, skipping = line[:0], false
		if err != nil {
			return n, last, nil
		}
	}
}

// orphanEndTime estimates when the attempt ended: its output's last
// change (stdout, stderr, NNI's file), not before it started nor after now.
func orphanEndTime(dir string, st *status) time.Time {
	now := time.Now().UTC()
	var end time.Time
	for _, name := range []string{stdoutFile, stderrFile, nniMetricsFile} {
		if fi, err := os.Stat(filepath.Join(dir, name)); err == nil && fi.ModTime().After(end) {
			end = fi.ModTime().UTC()
		}
	}
	if st.StartedAt != nil && end.Before(*st.StartedAt) {
		end = *st.StartedAt
	}
	if end.IsZero() || end.After(now) {
		end = now
	}
	return end
}
