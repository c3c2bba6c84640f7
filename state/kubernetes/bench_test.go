package k8sstate

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/trialform/trialform/state"
	"github.com/trialform/trialform/state/backendtest"
)

// TestBenchStateBackend is `make bench`'s kubernetes state numbers, beside
// the local backend's on the same state: a state of 10,000 trials
// (chunked into Secrets), loaded by a new client, and a one-trial change
// of one experiment saved under that experiment's lock (what apply does
// after each trial transition). Target: the save under 200 ms.
func TestBenchStateBackend(t *testing.T) {
	if os.Getenv("TRIALFORM_K8S_BENCH") == "" {
		t.Skip("set TRIALFORM_K8S_BENCH=1 (make bench)")
	}
	for _, sc := range []struct {
		name       string
		exps, junk int
	}{
		{"10 experiments of 1,000 trials", 10, 0},
		{"1 experiment of 10,000 trials", 1, 0},
		{"1 experiment of 10,000 trials with 2 KiB of random parameters each (parts chunked past 1 MiB)", 1, 2048},
	} {
		fmt.Printf("state bench: %s\n", sc.name)
		benchState(t, sc.exps, sc.junk)
	}
}

func benchState(t *testing.T, exps, junk int) {
	const trials, saves = 10000, 40
	ctx := context.Background()
	suffix := newSuffix()
	k8s := func() state.Backend { return open(t, suffix) }
	dir := filepath.Join(t.TempDir(), ".trialform")
	local := func() state.Backend { return state.Open(dir) }
	for _, bk := range []struct {
		name string
		open func() state.Backend
	}{{"local", local}, {"kubernetes", k8s}} {
		b := bk.open()
		s := sample(trials, exps, junk)
		start := time.Now()
		if err := b.Save(s); err != nil {
			t.Fatal(err)
		}
		first := time.Since(start)
		start = time.Now()
		if _, err := bk.open().Load(); err != nil {
			t.Fatal(err)
		}
		load := time.Since(start)
		lk, err := state.LockScope(ctx, b, []string{"exp0"}, "apply", "bench", 0)
		if err != nil {
			t.Fatal(err)
		}
		s, err = b.Load()
		if err != nil {
			t.Fatal(err)
		}
		ids := s.Experiments["exp0"].SortedTrials()
		var ds []time.Duration
		for i := range saves {
			tr := ids[len(ids)-1-i%50]
			tr.Attempts++
			start := time.Now()
			// As apply saves: naming the trial changed.
			commit, err := b.PrepareTrials(s, []state.TrialRef{{Experiment: "exp0", ID: tr.ID}})
			if err == nil && commit != nil {
				err = commit()
			}
			if err != nil {
				t.Fatal(err)
			}
			ds = append(ds, time.Since(start))
		}
		if err := lk.Unlock(); err != nil {
			t.Fatal(err)
		}
		sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
		med, p95 := ds[len(ds)/2], ds[len(ds)*95/100]
		extra := ""
		if kb, ok := b.(*Backend); ok {
			list, err := kb.c.listSecrets(ctx, kb.selector(rolePart))
			if err != nil {
				t.Fatal(err)
			}
			size, parts := 0, 0
			for _, sec := range list.Items {
				size += len(sec.Data[keyChunk])
			}
			for _, ps := range partNames(t, kb) {
				parts += len(ps)
			}
			nparts := 0
			idx, _, _ := kb.readIndex(ctx)
			for _, e := range idx.Experiments {
				nparts += len(e.Parts)
			}
			extra = fmt.Sprintf(", %d parts in %d Secrets (%.1f MiB gzip'd)", nparts, parts, float64(size)/(1<<20))
			if med > 200*time.Millisecond {
				defer t.Errorf("kubernetes: a one-experiment save takes %s (median), the target is 200ms", med)
			}
		}
		fmt.Printf("  %-10s: first save %s, load by a new client %s, one-trial save under an experiment lock median %s p95 %s (%d saves)%s\n",
			bk.name, first.Round(time.Millisecond), load.Round(time.Millisecond), med.Round(100*time.Microsecond), p95.Round(100*time.Microsecond), saves, extra)
	}
}

// sample is a state of n trials over exps experiments, each with junk
// bytes of random parameters.
func sample(n, exps, junk int) *state.State {
	s := state.New()
	base := backendtest.Sample(0).Experiments["mnist"]
	for e := range exps {
		x := *base
		x.Name = fmt.Sprintf("exp%d", e)
		x.Trials = map[string]*state.Trial{}
		s.Experiments[x.Name] = &x
	}
	for i := range n {
		tr := backendtest.Trial(i / exps)
		tr.ID = fmt.Sprintf("t%05d", i/exps)
		tr.Seq = i / exps
		if junk > 0 {
			r := make([]byte, junk/2)
			rand.Read(r)
			tr.Params["junk"] = hex.EncodeToString(r)
		}
		s.Experiments[fmt.Sprintf("exp%d", i%exps)].Trials[tr.ID] = tr
	}
	return s
}
