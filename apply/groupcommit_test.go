package apply

import (
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/trialform/trialform/state"
)

// gatedStore is a real state.Manager whose first Commit waits at a gate,
// as a slow fsync would.
type gatedStore struct {
	*state.Manager
	inCommit chan struct{}
	gate     chan struct{}
	once     sync.Once
	mu       sync.Mutex
	commits  int
}

func (g *gatedStore) Prepare(s *state.State) (func() error, error) {
	commit, err := g.Manager.Prepare(s)
	if err != nil || commit == nil {
		return commit, err
	}
	g.mu.Lock()
	g.commits++
	g.mu.Unlock()
	return func() error {
		g.once.Do(func() {
			close(g.inCommit)
			<-g.gate
		})
		return commit()
	}, nil
}

// Changes made while one change is being made durable share the next
// fsync (one journal record), and every change is durable when change
// returns.
func TestGroupCommitSharesFsyncs(t *testing.T) {
	m := state.NewManager(filepath.Join(t.TempDir(), ".trialform"))
	st := state.New()
	st.Experiments["e"] = &state.Experiment{Name: "e", ID: "abcdefgh", Trials: map[string]*state.Trial{}}
	if err := m.Save(st); err != nil {
		t.Fatal(err)
	}
	g := &gatedStore{Manager: m, inCommit: make(chan struct{}), gate: make(chan struct{})}
	s := NewSession(nil, st, g, nil)
	add := func(id string) func(*state.State) {
		return func(st *state.State) {
			st.Experiments["e"].Trials[id] = &state.Trial{ID: id, Status: state.Waiting}
		}
	}
	errs := make(chan error, 16)
	go func() { errs <- s.change(add("t0000")) }()
	select { // the first change is being made durable
	case <-g.inCommit:
	case <-time.After(30 * time.Second):
		t.Fatal("the session does not commit through Prepare")
	}
	const n = 15
	mutated := make(chan struct{}, n)
	for i := 1; i <= n; i++ {
		go func() {
			f := add(fmt.Sprintf("t%04d", i))
			errs <- s.change(func(st *state.State) { f(st); mutated <- struct{}{} })
		}()
	}
	for range n {
		select {
		case <-mutated:
		case <-time.After(30 * time.Second):
			t.Fatal("no change could be made while one was being made durable")
		}
	}
	close(g.gate)
	for range n + 1 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if g.commits != 2 {
		t.Errorf("%d journal commits for %d changes, want 2 (one, then the %d made meanwhile together)", g.commits, n+1, n)
	}
	got, err := state.NewManager(m.Dir()).Load()
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Experiments["e"].Trials) != n+1 {
		t.Errorf("%d trials durable, want %d", len(got.Experiments["e"].Trials), n+1)
	}
}
