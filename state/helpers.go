package state

import (
	"cmp"
	"crypto/rand"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	"github.com/google/uuid"
)

// New returns an empty state of the current format with a fresh lineage.
// It is not written anywhere until it is saved.
func New() *State {
	return &State{
		Version:     FormatVersion,
		Lineage:     uuid.NewString(),
		Experiments: map[string]*Experiment{},
	}
}

// Experiment returns the experiment called name, or nil if the state has
// none by that name.
func (s *State) Experiment(name string) *Experiment {
	if s == nil {
		return nil
	}
	return s.Experiments[name]
}

// OnPlatform returns the name the experiment's objects carry on its
// platform: the name it was created with (see PlatformName).
func (e *Experiment) OnPlatform() string {
	if e.PlatformName != "" {
		return e.PlatformName
	}
	return e.Name
}

// Move renames experiment from to to, keeping its id, trials and platform
// identity (OnPlatform stays what it was). It refuses when from is not in
// the state, when to is, and when another experiment's objects carry the
// name to on its platform.
func (s *State) Move(from, to string) error {
	e := s.Experiments[from]
	if e == nil {
		return fmt.Errorf("no experiment %q in the state", from)
	}
	if s.Experiments[to] != nil {
		return fmt.Errorf("experiment %q is already in the state; remove or move it first", to)
	}
	if err := NameFree(s, to, from); err != nil {
		return err
	}
	on := e.OnPlatform()
	delete(s.Experiments, from)
	e.Name = to
	e.PlatformName = on
	if on == to {
		e.PlatformName = ""
	}
	s.Experiments[to] = e
	return nil
}

// NameFree reports, as an error, that name is the platform name of an
// experiment in s other than except (an experiment renamed from name):
// a new experiment called name would share its objects on the platform.
func NameFree(s *State, name, except string) error {
	for n, e := range s.Experiments {
		if n != except && n != name && e.OnPlatform() == name {
			return fmt.Errorf("experiment %q was renamed to %q and its trials still carry the name %q on platform %s; choose another name", name, n, name, e.Platform)
		}
	}
	return nil
}

// SortedTrials returns the experiment's trials ordered by sequence number
// (then id, so the order is total even for hand-edited states).
func (e *Experiment) SortedTrials() []*Trial {
	if e == nil {
		return nil
	}
	ts := make([]*Trial, 0, len(e.Trials))
	for _, t := range e.Trials {
		ts = append(ts, t)
	}
	slices.SortFunc(ts, func(a, b *Trial) int {
		if c := cmp.Compare(a.Seq, b.Seq); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return ts
}

const idAlphabet = "abcdefghijklmnopqrstuvwxyz0123456789"

// NewExperimentID returns a fresh experiment instance id: 8 random
// lowercase alphanumerics, the shape NNI uses for NNI_EXP_ID.
func NewExperimentID() string {
	const n = 8
	out := make([]byte, 0, n)
	var buf [16]byte
	for len(out) < n {
		rand.Read(buf[:]) // never fails (crypto/rand panics instead)
		for _, b := range buf {
			// 252 = 7*36: reject the top values so every letter is equally likely.
			if b < 252 && len(out) < n {
				out = append(out, idAlphabet[int(b)%len(idAlphabet)])
			}
		}
	}
	return string(out)
}

// Clone returns a deep copy of the state: no map, slice or pointer of the
// copy is shared with s.
func (s *State) Clone() *State {
	if s == nil {
		return nil
	}
	c := *s
	if s.Experiments != nil {
		c.Experiments = make(map[string]*Experiment, len(s.Experiments))
		for k, e := range s.Experiments {
			c.Experiments[k] = e.Clone()
		}
	}
	return &c
}

// Clone returns a deep copy of the experiment and its trials.
func (e *Experiment) Clone() *Experiment {
	if e == nil {
		return nil
	}
	c := *e
	c.PartHashes = maps.Clone(e.PartHashes)
	c.DoneAt = clonePtr(e.DoneAt)
	if e.Hold != nil {
		h := *e.Hold
		h.Reasons = append([]string(nil), e.Hold.Reasons...)
		c.Hold = &h
	}
	c.Approval = clonePtr(e.Approval)
	if e.Trials != nil {
		c.Trials = make(map[string]*Trial, len(e.Trials))
		for k, t := range e.Trials {
			c.Trials[k] = t.Clone()
		}
	}
	return &c
}

// Clone returns a deep copy of the trial, parameter values included.
func (t *Trial) Clone() *Trial {
	if t == nil {
		return nil
	}
	c := *t
	if t.Params != nil {
		c.Params = make(map[string]any, len(t.Params))
		for k, v := range t.Params {
			c.Params[k] = cloneValue(v)
		}
	}
	c.Handle = maps.Clone(t.Handle)
	c.StartedAt = clonePtr(t.StartedAt)
	c.EndedAt = clonePtr(t.EndedAt)
	c.ExitCode = clonePtr(t.ExitCode)
	c.Value = clonePtr(t.Value)
	c.ValueFor = clonePtr(t.ValueFor)
	c.Retaken = t.Retaken.clone()
	c.Final = maps.Clone(t.Final)
	c.MetricsOffset = maps.Clone(t.MetricsOffset)
	c.Provenance = clonePtr(t.Provenance)
	c.Owner = clonePtr(t.Owner)
	c.Stopping = clonePtr(t.Stopping)
	c.Summary = t.Summary.clone()
	return &c
}

func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

// cloneValue deep-copies a JSON-compatible value (nested choices are maps).
func cloneValue(v any) any {
	switch x := v.(type) {
	case nil, float64, string, bool:
		return v
	case map[string]any:
		if x == nil {
			return x
		}
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = cloneValue(e)
		}
		return m
	case []any:
		if x == nil {
			return x
		}
		s := make([]any, len(x))
		for i, e := range x {
			s[i] = cloneValue(e)
		}
		return s
	}
	return cloneReflect(reflect.ValueOf(v)).Interface()
}

// cloneReflect deep-copies maps and slices of other types (a named map
// type for a nested choice, a typed slice).
func cloneReflect(v reflect.Value) reflect.Value {
	switch v.Kind() {
	case reflect.Interface:
		if v.IsNil() {
			return v
		}
		c := reflect.New(v.Type()).Elem()
		c.Set(cloneReflect(v.Elem()))
		return c
	case reflect.Map:
		if v.IsNil() {
			return v
		}
		c := reflect.MakeMapWithSize(v.Type(), v.Len())
		it := v.MapRange()
		for it.Next() {
			c.SetMapIndex(it.Key(), cloneReflect(it.Value()))
		}
		return c
	case reflect.Slice:
		if v.IsNil() {
			return v
		}
		c := reflect.MakeSlice(v.Type(), v.Len(), v.Len())
		for i := range v.Len() {
			c.Index(i).Set(cloneReflect(v.Index(i)))
		}
		return c
	}
	return v
}
