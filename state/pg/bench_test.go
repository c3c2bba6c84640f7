package pg

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/trialform/trialform/internal/pgtest"
	"github.com/trialform/trialform/state"
	"github.com/trialform/trialform/state/backendtest"
)

// TestBenchStateBackend is `make bench`'s pg state numbers, beside the
// local backend's on the same state: a state saved whole and loaded by a
// new client (1,000 and 100,000 trials), and a one-trial change saved
// under the experiment's lock, as apply saves after each trial transition
// (PrepareTrials naming it), and by a plain Save (every trial compared).
// Target: the one-trial save at 100,000 trials under 20 ms.
func TestBenchStateBackend(t *testing.T) {
	if os.Getenv("TRIALFORM_PG_BENCH") == "" {
		t.Skip("set TRIALFORM_PG_BENCH=1 (make bench)")
	}
	for _, n := range []int{1000, 100000} {
		fmt.Printf("pg bench: %d trials in one experiment\n", n)
		benchState(t, n)
	}
}

func benchState(t *testing.T, n int) {
	const saves = 40
	ctx := context.Background()
	// Durable, as local is: fsync and synchronous commits on.
	conn := pgtest.NewDurableServer(t).NewDB(t)
	dir := filepath.Join(t.TempDir(), ".trialform")
	for _, bk := range []struct {
		name string
		open func() state.Backend
	}{{"local", func() state.Backend { return state.Open(dir) }}, {"pg", func() state.Backend { return open(t, conn) }}} {
		b := bk.open()
		s := backendtest.Sample(n)
		start := time.Now()
		if err := b.Save(s); err != nil {
			t.Fatal(err)
		}
		first := time.Since(start)
		var loads []time.Duration
		for range 3 {
			start = time.Now()
			if _, err := bk.open().Load(); err != nil {
				t.Fatal(err)
			}
			loads = append(loads, time.Since(start))
		}
		lk, err := state.LockScope(ctx, b, []string{"mnist"}, "apply", "bench", 0)
		if err != nil {
			t.Fatal(err)
		}
		s, err = b.Load()
		if err != nil {
			t.Fatal(err)
		}
		ids := s.Experiments["mnist"].SortedTrials()
		var named, plain []time.Duration
		for i := range saves {
			tr := ids[(i*997)%len(ids)]
			tr.Attempts++
			start := time.Now()
			commit, err := b.PrepareTrials(s, []state.TrialRef{{Experiment: "mnist", ID: tr.ID}})
			if err == nil && commit != nil {
				err = commit()
			}
			if err != nil {
				t.Fatal(err)
			}
			named = append(named, time.Since(start))
			tr.Attempts++
			start = time.Now()
			if err := b.Save(s); err != nil {
				t.Fatal(err)
			}
			plain = append(plain, time.Since(start))
		}
		if err := lk.Unlock(); err != nil {
			t.Fatal(err)
		}
		mn, pn := stats(named)
		mp, pp := stats(plain)
		ml, _ := stats(loads)
		fmt.Printf("  %-5s: first save %s, load by a new client %s (median of 3); one-trial save under the experiment's lock: naming the trial median %s p95 %s, plain Save median %s p95 %s (%d saves each)\n",
			bk.name, first.Round(time.Millisecond), ml.Round(time.Millisecond), mn.Round(100*time.Microsecond), pn.Round(100*time.Microsecond),
			mp.Round(100*time.Microsecond), pp.Round(100*time.Microsecond), saves)
		if bk.name == "pg" && n >= 100000 && mn > 20*time.Millisecond {
			defer t.Errorf("pg: a one-trial save at %d trials takes %s (median), the target is 20ms", n, mn)
		}
	}
}

func stats(ds []time.Duration) (med, p95 time.Duration) {
	ds = append([]time.Duration(nil), ds...)
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	return ds[len(ds)/2], ds[len(ds)*95/100]
}
