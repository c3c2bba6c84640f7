package tuner

import (
	"math/rand/v2"
	"testing"

	"github.com/trialform/trialform/tuner/space"
)

// TestCMAESBeatsRandom: on a 5-d sphere with 150 trials, CMA-ES's best is
// far below random search's in most seeds.
func TestCMAESBeatsRandom(t *testing.T) {
	fn := sphereFunc(5)
	cm := mustNew(t, "cmaes", nil, fn.sp)
	rnd := mustNew(t, "random", nil, fn.sp)
	wins := 0
	var bc, br []float64
	for seed := int64(1); seed <= 10; seed++ {
		c := bestOf(loop(t, cm, fn.sp, Minimize, seed, 150, fn.f), Minimize)
		r := bestOf(loop(t, rnd, fn.sp, Minimize, seed, 150, fn.f), Minimize)
		bc, br = append(bc, c), append(br, r)
		if c < r/4 {
			wins++
		}
	}
	t.Logf("median best: cmaes %.4g, random %.4g", median(bc), median(br))
	if wins < 8 {
		t.Fatalf("CMA-ES beat random by 4x in only %d of 10 seeds", wins)
	}
}

func benchHistory(b *testing.B, name string, n int) {
	sp := benchSpace()
	tn := mustNew(b, name, nil, sp)
	r := rand.New(rand.NewPCG(1, 1))
	hist := make([]Observation, n)
	for i := range hist {
		p := space.SampleSpace(sp, r)
		hist[i] = Observation{Seq: i + 1, Params: p, State: Completed, Value: r.Float64()}
		if i%17 == 0 && i > n-40 {
			hist[i].State = Pending
		}
	}
	req := Request{Space: sp, Goal: Maximize, Seed: 1, History: hist, Seqs: []int{n + 1}}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := tn.Suggest(req); err != nil {
			b.Fatal(err)
		}
	}
}

// benchLoop is the realistic case: a history the tuner produced itself, so
// that the replay re-draws every point.
func benchLoop(b *testing.B, name string, n int) {
	fn := sphereFunc(5)
	tn := mustNew(b, name, nil, fn.sp)
	hist := loop(b, tn, fn.sp, Minimize, 1, n, fn.f)
	req := Request{Space: fn.sp, Goal: Minimize, Seed: 1, History: hist, Seqs: []int{n + 1}}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := tn.Suggest(req); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCMAESSuggest1000(b *testing.B)    { benchHistory(b, "cmaes", 1000) }
func BenchmarkCMAESSuggest1000Own(b *testing.B) { benchLoop(b, "cmaes", 1000) }
func BenchmarkCMAESSuggest10000(b *testing.B)   { benchHistory(b, "cmaes", 10000) }

func BenchmarkAutoSuggest1000(b *testing.B)      { benchHistory(b, "auto", 1000) }
func BenchmarkAutoSuggest1000Own(b *testing.B)   { benchLoop(b, "auto", 1000) }
func BenchmarkAnnealSuggest1000(b *testing.B)    { benchHistory(b, "anneal", 1000) }
func BenchmarkEvolutionSuggest1000(b *testing.B) { benchHistory(b, "evolution", 1000) }
