package kubernetes

import (
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// snapshotTTL is how long a List answers Reads: a refresh Lists, then
// Reads every trial, so the snapshot must outlive the Reads of a large
// refresh; changes this process makes invalidate it, and the next refresh
// Lists again.
const snapshotTTL = 30 * time.Second

// snapshots holds the last List of each experiment (trial objects by trial
// id, their pods by the object's UID): the Reads of a refresh, which follow
// its List at once, use it instead of two calls each. O is the trial
// object's type (a Job, a custom resource).
type snapshots[O any] struct {
	uid func(O) string

	mu sync.Mutex
	m  map[string]*snapshot[O]
}

type snapshot[O any] struct {
	at   time.Time
	objs map[string]O
	pods map[string][]corev1.Pod
}

func newSnapshots[O any](uid func(O) string) *snapshots[O] {
	return &snapshots[O]{uid: uid, m: map[string]*snapshot[O]{}}
}

// put records a List of exp.
func (s *snapshots[O]) put(exp string, objs map[string]O, pods map[string][]corev1.Pod) {
	s.mu.Lock()
	s.m[exp] = &snapshot[O]{at: time.Now(), objs: objs, pods: pods}
	s.mu.Unlock()
}

// get returns a trial's object and pods from a recent List.
func (s *snapshots[O]) get(exp, trial string) (O, []corev1.Pod, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var zero O
	sn := s.m[exp]
	if sn == nil || time.Since(sn.at) > snapshotTTL {
		return zero, nil, false
	}
	o, ok := sn.objs[trial]
	if !ok {
		return zero, nil, false
	}
	return o, sn.pods[s.uid(o)], true
}

// drop forgets the experiment's snapshot (after a change we made).
func (s *snapshots[O]) drop(exp string) {
	s.mu.Lock()
	delete(s.m, exp)
	s.mu.Unlock()
}
