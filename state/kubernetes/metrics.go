package k8sstate

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/trialform/trialform/state"
)

// Metric series: one Secret per trial (gzip'd JSON lines of MetricPoint),
// continued in further Secrets (NAME-1, NAME-2, ...) once one holds
// seriesChunkRaw bytes; a full Secret is marked so, and appends go to the
// next. An append replaces the last Secret conditionally on its
// resourceVersion, so it is whole or not at all, and a state save never
// touches a series.

const (
	keyPoints = "points.jsonl.gz"
	annotFull = "trialform.dev/full"
	annotFrom = "trialform.dev/moved-from"
)

// seriesChunkRaw is how many bytes of JSON lines one series Secret holds
// before the series continues in the next (an append recompresses its
// Secret: this bounds that work). A variable for tests.
var seriesChunkRaw = 1 << 20

func checkName(kind, name string) error {
	if name == "" || name == "." || name == ".." || strings.ContainsAny(name, "/\\\x00") {
		return fmt.Errorf("invalid %s name %q for a metric series", kind, name)
	}
	return nil
}

func (b *Backend) seriesName(exp, trial string, i int) string {
	n := "trialform-series-" + b.suffix + "-" + hashName(exp+"\x00"+trial)
	if i > 0 {
		n += "-" + strconv.Itoa(i)
	}
	return n
}

// AppendMetrics appends points to one trial's series.
func (b *Backend) AppendMetrics(experiment, trial string, pts []state.MetricPoint) error {
	return b.AppendMetricsBatch([]state.MetricsBatch{{Experiment: experiment, Trial: trial, Points: pts}})
}

// AppendMetricsBatch appends to several series at once (in parallel, in
// order within one series).
func (b *Backend) AppendMetricsBatch(batches []state.MetricsBatch) error {
	type series struct {
		exp, trial string
		lines      []byte
	}
	var order []*series
	by := map[[2]string]*series{}
	for _, bt := range batches {
		if len(bt.Points) == 0 {
			continue
		}
		if err := checkName("experiment", bt.Experiment); err != nil {
			return err
		}
		if err := checkName("trial", bt.Trial); err != nil {
			return err
		}
		k := [2]string{bt.Experiment, bt.Trial}
		s := by[k]
		if s == nil {
			s = &series{exp: bt.Experiment, trial: bt.Trial}
			by[k] = s
			order = append(order, s)
		}
		for _, p := range bt.Points {
			l, err := json.Marshal(p)
			if err != nil {
				return fmt.Errorf("record metrics of %s/%s: %w", bt.Experiment, bt.Trial, err)
			}
			s.lines = append(append(s.lines, l...), '\n')
		}
	}
	if len(order) == 0 {
		return nil
	}
	if err := b.checkMetrics(batches); err != nil {
		return err
	}
	ctx, cancel := background()
	defer cancel()
	return parallel(len(order), func(i int) error {
		s := order[i]
		if err := b.appendSeries(ctx, s.exp, s.trial, s.lines); err != nil {
			return fmt.Errorf("record metrics of %s/%s: %w", s.exp, s.trial, err)
		}
		return nil
	})
}

func (b *Backend) lastChunk(exp, trial string) int {
	b.seriesMu.Lock()
	defer b.seriesMu.Unlock()
	return b.series[exp+"\x00"+trial]
}

func (b *Backend) setLastChunk(exp, trial string, i int) {
	b.seriesMu.Lock()
	defer b.seriesMu.Unlock()
	if b.series == nil {
		b.series = map[string]int{}
	}
	b.series[exp+"\x00"+trial] = i
}

func (b *Backend) newSeriesSecret(exp, trial string, i int, data []byte) *corev1.Secret {
	sec := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name:        b.seriesName(exp, trial, i),
			Labels:      b.labels(roleSeries),
			Annotations: map[string]string{annotExp: exp, annotTrial: trial, annotPart: strconv.Itoa(i)},
		},
		Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{keyPoints: gzipBytes(data)},
	}
	sec.Labels[labelExp] = hashName(exp)
	return sec
}

// appendSeries appends JSON lines to a series.
func (b *Backend) appendSeries(ctx context.Context, exp, trial string, lines []byte) error {
	i := b.lastChunk(exp, trial)
	cameFromFull := false
	for attempt := 0; attempt < 1000; attempt++ {
		name := b.seriesName(exp, trial, i)
		sec, err := b.c.getSecret(ctx, name)
		if apierrors.IsNotFound(err) {
			if i > 0 && !cameFromFull {
				i = 0 // removed or moved since this client last looked
				continue
			}
			_, err := b.c.createSecret(ctx, b.newSeriesSecret(exp, trial, i, lines))
			if apierrors.IsAlreadyExists(err) {
				continue
			}
			if err != nil {
				return err
			}
			b.setLastChunk(exp, trial, i)
			return nil
		}
		if err != nil {
			return err
		}
		if sec.Annotations[annotFull] == "true" {
			i++
			cameFromFull = true
			continue
		}
		cameFromFull = false
		data, err := gunzip(sec.Data[keyPoints])
		if err != nil {
			return fmt.Errorf("Secret %s/%s %v: it was changed outside trialform; move it away to start the series afresh", b.ns, name, err)
		}
		if len(data) > 0 && len(data)+len(lines) > seriesChunkRaw {
			// Full: mark it, and go on in the next.
			if sec.Annotations == nil {
				sec.Annotations = map[string]string{}
			}
			sec.Annotations[annotFull] = "true"
			if _, err := b.c.updateSecret(ctx, sec); err != nil && !apierrors.IsConflict(err) {
				return err
			}
			continue
		}
		sec.Data[keyPoints] = gzipBytes(append(data, lines...))
		_, err = b.c.updateSecret(ctx, sec)
		if apierrors.IsConflict(err) {
			continue // another append meanwhile
		}
		if err != nil {
			return err
		}
		b.setLastChunk(exp, trial, i)
		return nil
	}
	return fmt.Errorf("the series keeps being changed by others; try again")
}

// ReadMetricsFile returns a series as JSON lines, nil when there is none.
func (b *Backend) ReadMetricsFile(experiment, trial string) ([]byte, error) {
	if err := checkName("experiment", experiment); err != nil {
		return nil, err
	}
	if err := checkName("trial", trial); err != nil {
		return nil, err
	}
	ctx, cancel := background()
	defer cancel()
	var out []byte
	for i := 0; ; i++ {
		name := b.seriesName(experiment, trial, i)
		sec, err := b.c.getSecret(ctx, name)
		if apierrors.IsNotFound(err) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("read metrics: %w", err)
		}
		data, err := gunzip(sec.Data[keyPoints])
		if err != nil {
			return nil, fmt.Errorf("read metrics: Secret %s/%s %v", b.ns, name, err)
		}
		out = append(out, data...)
		if sec.Annotations[annotFull] != "true" {
			break
		}
	}
	return out, nil
}

// ReadMetrics returns a series in the order appended, each point once.
func (b *Backend) ReadMetrics(experiment, trial string) ([]state.MetricPoint, error) {
	data, err := b.ReadMetricsFile(experiment, trial)
	if err != nil || data == nil {
		return nil, err
	}
	return state.DecodeMetricLines(data, experiment+"/"+trial)
}

// seriesOf lists the series Secrets of an experiment.
func (b *Backend) seriesOf(ctx context.Context, exp string) ([]corev1.Secret, error) {
	list, err := b.c.listSecrets(ctx, b.selector(roleSeries)+","+labelExp+"="+hashName(exp))
	if err != nil {
		return nil, err
	}
	var out []corev1.Secret
	for _, s := range list.Items {
		if s.Annotations[annotExp] == exp {
			out = append(out, s)
		}
	}
	return out, nil
}

// RemoveMetrics deletes an experiment's series.
func (b *Backend) RemoveMetrics(experiment string) error {
	if err := checkName("experiment", experiment); err != nil {
		return err
	}
	ctx, cancel := background()
	defer cancel()
	secs, err := b.seriesOf(ctx, experiment)
	if err != nil {
		return fmt.Errorf("remove metrics of %s: %w", experiment, err)
	}
	if err := parallel(len(secs), func(i int) error { return b.c.deleteSecret(ctx, secs[i].Name, "") }); err != nil {
		return fmt.Errorf("remove metrics of %s: %w", experiment, err)
	}
	b.seriesMu.Lock()
	b.series = nil
	b.seriesMu.Unlock()
	return nil
}

// MoveMetrics renames an experiment's series: copies under the new name,
// then deletes the old ones, so a move interrupted is finished by the
// next (the copies say where they came from).
func (b *Backend) MoveMetrics(from, to string) error {
	if err := checkName("experiment", from); err != nil {
		return err
	}
	if err := checkName("experiment", to); err != nil {
		return err
	}
	ctx, cancel := background()
	defer cancel()
	src, err := b.seriesOf(ctx, from)
	if err != nil || len(src) == 0 {
		if err != nil {
			return fmt.Errorf("move metrics of %s to %s: %w", from, to, err)
		}
		return nil
	}
	dst, err := b.seriesOf(ctx, to)
	if err != nil {
		return fmt.Errorf("move metrics of %s to %s: %w", from, to, err)
	}
	for _, d := range dst {
		if d.Annotations[annotFrom] != from {
			return fmt.Errorf("move metrics of %s to %s: experiment %s already has metric series (Secret %s/%s); move or remove them first", from, to, to, b.ns, d.Name)
		}
	}
	sort.Slice(src, func(i, j int) bool { return src[i].Name < src[j].Name })
	var mu sync.Mutex
	err = parallel(len(src), func(i int) error {
		s := src[i]
		n, _ := strconv.Atoi(s.Annotations[annotPart])
		c := b.newSeriesSecret(to, s.Annotations[annotTrial], n, nil)
		c.Data = s.Data
		c.Annotations[annotFrom] = from
		if s.Annotations[annotFull] != "" {
			c.Annotations[annotFull] = s.Annotations[annotFull]
		}
		_, err := b.c.createSecret(ctx, c)
		if apierrors.IsAlreadyExists(err) {
			// Copied by a move interrupted before: copy again.
			cur, gerr := b.c.getSecret(ctx, c.Name)
			if gerr != nil {
				return gerr
			}
			c.ResourceVersion = cur.ResourceVersion
			_, err = b.c.updateSecret(ctx, c)
		}
		mu.Lock()
		defer mu.Unlock()
		return err
	})
	if err != nil {
		return fmt.Errorf("move metrics of %s to %s: %w", from, to, err)
	}
	if err := parallel(len(src), func(i int) error { return b.c.deleteSecret(ctx, src[i].Name, "") }); err != nil {
		return fmt.Errorf("move metrics of %s to %s: %w", from, to, err)
	}
	b.seriesMu.Lock()
	b.series = nil
	b.seriesMu.Unlock()
	return nil
}

// MetricsStamp returns the resourceVersion of a series' first Secret and
// of its last (changed by every append).
func (b *Backend) MetricsStamp(experiment, trial string) (string, error) {
	if err := checkName("experiment", experiment); err != nil {
		return "", err
	}
	if err := checkName("trial", trial); err != nil {
		return "", err
	}
	ctx, cancel := background()
	defer cancel()
	var stamp []string
	for i := 0; ; i++ {
		sec, err := b.c.getSecretMeta(ctx, b.seriesName(experiment, trial, i))
		if apierrors.IsNotFound(err) {
			break
		}
		if err != nil {
			return "", fmt.Errorf("read metrics: %w", err)
		}
		stamp = append(stamp, sec.ResourceVersion)
		if sec.Annotations[annotFull] != "true" {
			break
		}
	}
	return strings.Join(stamp, ","), nil
}
