package state

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/trialform/trialform/internal/fsx"
)

// metricsPath returns the series file of one trial.
func (m *Manager) metricsPath(experiment, trial string) (string, error) {
	if err := checkName("experiment", experiment); err != nil {
		return "", err
	}
	if err := checkName("trial", trial); err != nil {
		return "", err
	}
	return filepath.Join(m.dir, metricsDir, experiment, trial+".jsonl"), nil
}

// ReadMetricsFile returns the raw bytes of a trial's metric series file
// (JSON lines of MetricPoint), nil if there is none, for readers that
// decode it themselves (export reads a million points).
func (m *Manager) ReadMetricsFile(experiment, trial string) ([]byte, error) {
	path, err := m.metricsPath(experiment, trial)
	if err != nil {
		return nil, err
	}
	data, err := fsx.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read metrics: %w", err)
	}
	return data, nil
}

// checkName refuses names that would escape the metrics directory.
func checkName(kind, name string) error {
	if name == "" || name == "." || name == ".." || strings.ContainsAny(name, "/\\\x00") {
		return fmt.Errorf("invalid %s name %q for a metrics file", kind, name)
	}
	return nil
}

// AppendMetrics appends points to a trial's metric series, one JSON line
// each, and fsyncs. A line torn by a crash during an earlier append is
// cut off first so it cannot swallow the new points.
func (m *Manager) AppendMetrics(experiment, trial string, pts []MetricPoint) error {
	return m.AppendMetricsBatch([]MetricsBatch{{Experiment: experiment, Trial: trial, Points: pts}})
}

// MetricsBatch is a set of points to append to one trial's series.
type MetricsBatch struct {
	Experiment, Trial string
	Points            []MetricPoint
}

// AppendMetricsBatch is AppendMetrics for several trials at once: every
// batch is written first, then the files (and the directories of new
// files) are fsynced in parallel, so trials that report together share
// the filesystem's journal commits instead of paying one each in turn.
// When it returns nil every point is durable; on an error some batches
// may be written (readers drop duplicates when they are appended again).
func (m *Manager) AppendMetricsBatch(batches []MetricsBatch) error {
	type pending struct {
		f   *os.File
		dir string // to sync too: the file is new
	}
	var files []pending
	defer func() {
		for _, p := range files {
			p.f.Close()
		}
	}()
	m.metricsMu.Lock()
	defer m.metricsMu.Unlock()
	for _, b := range batches {
		if len(b.Points) == 0 {
			continue
		}
		f, isNew, err := m.writeMetrics(b.Experiment, b.Trial, b.Points)
		if err != nil {
			return err
		}
		p := pending{f: f}
		if isNew {
			p.dir = filepath.Dir(f.Name())
		}
		files = append(files, p)
	}
	if len(files) == 0 {
		return nil
	}
	dirs := map[string]bool{}
	for _, p := range files {
		if p.dir != "" {
			dirs[p.dir] = true
		}
	}
	errc := make(chan error, len(files)+len(dirs))
	for _, p := range files {
		go func(f *os.File) { errc <- f.Sync() }(p.f)
	}
	for d := range dirs {
		go func(d string) { errc <- fsx.SyncDir(d) }(d)
	}
	var first error
	for range len(files) + len(dirs) {
		if err := <-errc; err != nil && first == nil {
			first = err
		}
	}
	if first != nil {
		return fmt.Errorf("record metrics: %w", first)
	}
	return nil
}

// writeMetrics appends pts to a trial's series file, without syncing,
// and returns the open file and whether it was new (empty). The caller
// holds metricsMu, and syncs and closes the file.
func (m *Manager) writeMetrics(experiment, trial string, pts []MetricPoint) (*os.File, bool, error) {
	path, err := m.metricsPath(experiment, trial)
	if err != nil {
		return nil, false, err
	}
	var buf bytes.Buffer
	for _, p := range pts {
		b, err := json.Marshal(p)
		if err != nil {
			return nil, false, fmt.Errorf("record metrics of %s/%s: %w", experiment, trial, err)
		}
		buf.Write(b)
		buf.WriteByte('\n')
	}
	dir := filepath.Dir(path)
	if !m.metricsMarked {
		// The metrics root is a top directory for ext4's allocator, so
		// each experiment's series (a file per trial) lands in a quiet
		// inode group (see internal/topdir).
		if err := mkdirState(filepath.Dir(dir)); err != nil {
			return nil, false, fmt.Errorf("record metrics: %w", err)
		}
		m.metricsMarked = true
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, false, fmt.Errorf("record metrics: %w", err)
	}
	f, err := fsx.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, false, fmt.Errorf("record metrics: %w", err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, false, fmt.Errorf("record metrics: %w", err)
	}
	if fi.Size() > 0 {
		if err := cutTornLine(f, fi.Size()); err != nil {
			f.Close()
			return nil, false, fmt.Errorf("record metrics: repair %s: %w", path, err)
		}
	}
	if _, err := f.Write(buf.Bytes()); err != nil {
		f.Close()
		return nil, false, fmt.Errorf("record metrics: %w", err)
	}
	return f, fi.Size() == 0, nil
}

// cutTornLine truncates a file that does not end in a newline back to its
// last newline.
func cutTornLine(f *os.File, size int64) error {
	var last [1]byte
	if _, err := f.ReadAt(last[:], size-1); err != nil {
		return err
	}
	if last[0] == '\n' {
		return nil
	}
	const chunk = 4096
	buf := make([]byte, chunk)
	end := size
	for end > 0 {
		start := max(0, end-chunk)
		n, err := f.ReadAt(buf[:end-start], start)
		if err != nil && n < int(end-start) {
			return err
		}
		if i := bytes.LastIndexByte(buf[:n], '\n'); i >= 0 {
			return f.Truncate(start + int64(i) + 1)
		}
		end = start
	}
	return f.Truncate(0)
}

// ReadMetrics returns a trial's metric series in the order it was
// appended; nil if there is none. A torn last line (a crash during an
// append) is ignored; a bad line elsewhere is an error. A point appended
// again (the same type, sequence and value: a refresh replayed after a
// crash between appending and saving the state's offsets) is returned
// once.
func (m *Manager) ReadMetrics(experiment, trial string) ([]MetricPoint, error) {
	path, err := m.metricsPath(experiment, trial)
	if err != nil {
		return nil, err
	}
	data, err := fsx.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read metrics: %w", err)
	}
	return DecodeMetricLines(data, path)
}

// DecodeMetricLines decodes a series kept as JSON lines of MetricPoint
// (what ReadMetricsFile returns), as every backend's ReadMetrics does: a
// torn last line (a crash during an append) is ignored; a bad line
// elsewhere is an error naming what (the series) and the line; a point
// appended again (the same type, sequence and value: a refresh replayed
// after a crash between appending and saving the state's offsets) is
// returned once.
func DecodeMetricLines(data []byte, what string) ([]MetricPoint, error) {
	var pts []MetricPoint
	type key struct {
		typ     string
		seq     int
		attempt int
		value   string
	}
	seen := map[key]bool{}
	line := 0
	for len(data) > 0 {
		line++
		l, rest, complete := bytes.Cut(data, []byte{'\n'})
		data = rest
		if len(bytes.TrimSpace(l)) == 0 {
			continue
		}
		var p MetricPoint
		if err := json.Unmarshal(l, &p); err != nil {
			if !complete {
				break // torn by a crash mid-append
			}
			return pts, fmt.Errorf("read metrics %s: line %d: %w", what, line, err)
		}
		k := key{p.Type, p.Sequence, p.Attempt, string(p.Value)}
		if seen[k] {
			continue
		}
		seen[k] = true
		pts = append(pts, p)
	}
	return pts, nil
}

// RemoveMetrics removes the metric series of every trial of an experiment.
func (m *Manager) RemoveMetrics(experiment string) error {
	if err := checkName("experiment", experiment); err != nil {
		return err
	}
	m.metricsMu.Lock()
	defer m.metricsMu.Unlock()
	if err := os.RemoveAll(filepath.Join(m.dir, metricsDir, experiment)); err != nil {
		return fmt.Errorf("remove metrics of %s: %w", experiment, err)
	}
	return nil
}

// RemoveTensorBoard removes an experiment's part of the TensorBoard tree
// (TensorBoardDir/EXPERIMENT), where `trialform tensorboard` copies remote
// trials' logs.
func (m *Manager) RemoveTensorBoard(experiment string) error {
	if err := checkName("experiment", experiment); err != nil {
		return err
	}
	if err := os.RemoveAll(filepath.Join(m.dir, TensorBoardDir, experiment)); err != nil {
		return fmt.Errorf("remove the tensorboard logs of %s: %w", experiment, err)
	}
	return nil
}

// MoveMetrics renames the metric series of experiment from to experiment
// to (state mv, moved blocks). Moving what is already moved (from absent,
// to present) or an experiment without series does nothing, so a move
// interrupted between this and the state save is finished by the next run.
func (m *Manager) MoveMetrics(from, to string) error {
	if err := checkName("experiment", from); err != nil {
		return err
	}
	if err := checkName("experiment", to); err != nil {
		return err
	}
	m.metricsMu.Lock()
	defer m.metricsMu.Unlock()
	src, dst := filepath.Join(m.dir, metricsDir, from), filepath.Join(m.dir, metricsDir, to)
	if _, err := os.Stat(src); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if _, err := os.Stat(dst); err == nil {
		return fmt.Errorf("move metrics of %s to %s: %s already exists; move or remove it first", from, to, dst)
	}
	if err := os.Rename(src, dst); err != nil {
		return fmt.Errorf("move metrics of %s to %s: %w", from, to, err)
	}
	return fsx.SyncDir(filepath.Join(m.dir, metricsDir))
}
