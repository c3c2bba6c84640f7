package k8sstate

import (
	"encoding/json"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/trialform/trialform/state"
)

// The refresh marks: one Secret, replaced conditionally on its
// resourceVersion.

const keyMarks = "marks.json"

type marksDoc struct {
	Version     int                  `json:"version"`
	Lineage     string               `json:"lineage"`
	Experiments map[string]time.Time `json:"experiments"`
}

// marksCache is what this client last wrote.
type marksCache struct {
	lineage string
	at      map[string]time.Time
}

// markResolution: a mark moving every named experiment by less is not
// written (apply refreshes many times a second).
const markResolution = time.Second

// MarkRefreshed records that the experiments were refreshed at t.
func (b *Backend) MarkRefreshed(lineage string, experiments []string, t time.Time) error {
	if len(experiments) == 0 {
		return nil
	}
	b.marksMu.Lock()
	defer b.marksMu.Unlock()
	if m := b.marks; m != nil && m.lineage == lineage {
		fresh := true
		for _, e := range experiments {
			at, ok := m.at[e]
			if d := t.Sub(at); !ok || d < 0 || d >= markResolution {
				fresh = false
				break
			}
		}
		if fresh {
			return nil
		}
	}
	ctx, cancel := background()
	defer cancel()
	for attempt := 0; attempt < 100; attempt++ {
		sec, err := b.c.getSecret(ctx, b.marksName())
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("record refresh time: %w", err)
		}
		doc := marksDoc{Version: 1, Lineage: lineage, Experiments: map[string]time.Time{}}
		if err == nil {
			var old marksDoc
			if json.Unmarshal(sec.Data[keyMarks], &old) == nil && old.Lineage == lineage && old.Experiments != nil {
				doc.Experiments = old.Experiments
			}
		}
		for _, e := range experiments {
			doc.Experiments[e] = t.UTC()
		}
		data, _ := json.Marshal(doc)
		if sec == nil {
			sec = &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: b.marksName(), Labels: b.labels(roleMarks)}, Type: corev1.SecretTypeOpaque}
			sec.Data = map[string][]byte{keyMarks: data}
			_, err = b.c.createSecret(ctx, sec)
		} else {
			sec.Data = map[string][]byte{keyMarks: data}
			_, err = b.c.updateSecret(ctx, sec)
		}
		if apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) {
			continue
		}
		if err != nil {
			return fmt.Errorf("record refresh time: %w", err)
		}
		b.marks = &marksCache{lineage: lineage, at: doc.Experiments}
		return nil
	}
	return fmt.Errorf("record refresh time: Secret %s/%s keeps being changed by others", b.ns, b.marksName())
}

// RefreshedAt returns the marks of the state with lineage (none when
// unknown or unreadable: it is advisory).
func (b *Backend) RefreshedAt(lineage string) map[string]time.Time {
	ctx, cancel := background()
	defer cancel()
	sec, err := b.c.getSecret(ctx, b.marksName())
	if err != nil {
		return map[string]time.Time{}
	}
	var doc marksDoc
	if json.Unmarshal(sec.Data[keyMarks], &doc) != nil || doc.Lineage != lineage || doc.Experiments == nil {
		return map[string]time.Time{}
	}
	return doc.Experiments
}

// StateStamp returns the index's and the marks' resourceVersions.
func (b *Backend) StateStamp() (state.Stamp, error) {
	ctx, cancel := background()
	defer cancel()
	var st state.Stamp
	sec, err := b.c.getSecretMeta(ctx, b.indexName())
	if apierrors.IsNotFound(err) {
		return st, nil
	}
	if err != nil {
		return st, fmt.Errorf("read state: %w", err)
	}
	st.State = sec.ResourceVersion
	st.Written = sec.CreationTimestamp.Time
	for _, mf := range sec.ManagedFields {
		if mf.Time != nil && mf.Time.After(st.Written) {
			st.Written = mf.Time.Time
		}
	}
	if m, err := b.c.getSecretMeta(ctx, b.marksName()); err == nil {
		st.Refreshed = m.ResourceVersion
	}
	return st, nil
}

// Lost returns what a lost index left: parts and series of experiments.
func (b *Backend) Lost() (*state.LostState, error) {
	ok, err := b.Exists()
	if err != nil || ok {
		return nil, err
	}
	ctx, cancel := background()
	defer cancel()
	list, err := b.c.listSecretsMeta(ctx, b.selector(""))
	if err != nil {
		return nil, fmt.Errorf("look for a lost state: %w", err)
	}
	parts, series := map[string]bool{}, map[string]bool{}
	nparts := 0
	for _, s := range list.Items {
		e := s.Annotations[annotExp]
		switch s.Labels[labelRole] {
		case rolePart:
			nparts++
			if e != "" {
				parts[e] = true
			}
		case roleSeries:
			if e != "" {
				series[e] = true
			}
		}
	}
	if nparts == 0 && len(series) == 0 {
		return nil, nil
	}
	ls := &state.LostState{Dir: b.ns, Where: b.Location(), Afresh: fmt.Sprintf("delete the Secrets labelled %s=%s in namespace %s", labelState, b.suffix, b.ns)}
	if nparts > 0 {
		ls.AddTraces(fmt.Sprintf("%d state part Secret(s) (labelled %s=%s,%s=%s)", nparts, labelState, b.suffix, labelRole, rolePart), sortedKeys(parts))
	}
	ls.AddTraces("metric series", sortedKeys(series))
	return ls, nil
}
