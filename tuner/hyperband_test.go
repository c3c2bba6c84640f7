package tuner

import (
	"errors"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/trialform/trialform/internal/decl"
	"github.com/trialform/trialform/tuner/space"
)

func hbSpace() *space.Space {
	return &space.Space{Params: []space.Param{
		{Name: "x", Kind: space.Uniform, Args: []float64{0, 1}},
		{Name: "n", Kind: space.Randint, Args: []float64{1, 100}},
	}}
}

func TestHyperbandSchedule(t *testing.T) {
	tn, err := New("hyperband", map[string]any{"max_budget": 9.0, "eta": 3.0}, hbSpace())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	h := tn.(*hyperband)
	for k := 0; k < h.round; k++ {
		got = append(got, fmtNum(h.slot(k).budget))
	}
	// Brackets: 9 configs at 1 -> 3 at 3 -> 1 at 9; 5 at 3 -> 1 at 9; 3 at 9.
	want := []string{"1", "1", "1", "1", "1", "1", "1", "1", "1", "3", "3", "3", "9", "3", "3", "3", "3", "3", "9", "9", "9", "9"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("budgets = %v\nwant %v", got, want)
	}
}

func TestHyperbandPromotes(t *testing.T) {
	sp := hbSpace()
	for _, goal := range []Goal{Maximize, Minimize} {
		tn, err := New("hyperband", map[string]any{"max_budget": 9.0}, sp)
		if err != nil {
			t.Fatal(err)
		}
		seqs := []int{0, 1, 2, 3, 4, 5, 6, 7, 8}
		first, err := tn.Suggest(Request{Space: sp, Goal: goal, Seed: 1, Seqs: seqs})
		if err != nil {
			t.Fatal(err)
		}
		var hist []Observation
		for i, p := range first {
			if p[BudgetParam] != int64(1) || !sp.Contains(withoutBudget(p)) {
				t.Fatalf("rung 0 trial %d: %v", i, p)
			}
			hist = append(hist, Observation{Seq: i, Params: p, State: Pending})
		}
		// Rung 1 waits while rung 0 runs.
		out, err := tn.Suggest(Request{Space: sp, Goal: goal, Seed: 1, History: hist, Seqs: []int{9, 10}})
		var wait *WaitError
		if !errors.As(err, &wait) || wait.Ready != 0 || len(out) != 0 {
			t.Fatalf("rung 1 before rung 0 finished: %v %v", out, err)
		}
		// Rung 0 done (trial 4 failed): rung 1 re-runs the best three with budget 3.
		for i := range hist {
			hist[i].State, hist[i].Value = Completed, float64(i)
		}
		hist[8].State = Failed
		out, err = tn.Suggest(Request{Space: sp, Goal: goal, Seed: 1, History: hist, Seqs: []int{9, 10, 11, 12}})
		if !errors.As(err, &wait) || wait.Ready != 3 || len(out) != 3 {
			t.Fatalf("rung 1 + rung 2: %d ready, %v", len(out), err)
		}
		best := []int{7, 6, 5} // values = seq; trial 8 failed
		if goal == Minimize {
			best = []int{0, 1, 2}
		}
		for j, p := range out {
			if p[BudgetParam] != int64(3) || !reflect.DeepEqual(withoutBudget(p), withoutBudget(first[best[j]])) {
				t.Fatalf("%s: rung 1 slot %d = %v, want trial %d's config %v", goal, j, p, best[j], first[best[j]])
			}
		}
	}
}

func withoutBudget(p space.Params) space.Params {
	q := space.Params{}
	for k, v := range p {
		if k != BudgetParam {
			q[k] = v
		}
	}
	return q
}

func TestHyperbandDeterministicAndRepeats(t *testing.T) {
	sp := hbSpace()
	tn, _ := New("hyperband", map[string]any{"max_budget": 9.0, "seed": 5.0}, sp)
	a, err := tn.Suggest(Request{Space: sp, Seqs: []int{0, 1}})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := tn.Suggest(Request{Space: sp, Seqs: []int{1, 0}})
	if !reflect.DeepEqual(a[0], b[1]) || !reflect.DeepEqual(a[1], b[0]) || reflect.DeepEqual(a[0], a[1]) {
		t.Fatalf("not deterministic per sequence number: %v %v", a, b)
	}
	// Slot 22 starts the second round: a fresh rung-0 trial with budget 1.
	c, err := tn.Suggest(Request{Space: sp, Seqs: []int{22}})
	if err != nil || c[0][BudgetParam] != int64(1) {
		t.Fatalf("second round: %v %v", c, err)
	}
}

func TestBOHBUsesModel(t *testing.T) {
	sp := hbSpace()
	hb, _ := New("hyperband", map[string]any{"max_budget": 9.0}, sp)
	bo, _ := New("bohb", map[string]any{"max_budget": 9.0, "startup_trials": 5.0}, sp)
	// Ten results at budget 1, best near x = 0.9: the model proposes there.
	var hist []Observation
	for i := 0; i < 9; i++ {
		x := float64(i) / 10
		hist = append(hist, Observation{Seq: i, State: Completed, Value: -(x - 0.9) * (x - 0.9),
			Params: space.Params{"x": x, "n": int64(10 * i), BudgetParam: int64(1)}})
	}
	// Slot 13 is the first rung-0 slot of bracket 1 (budget 3); the
	// results at budget 1 are the largest with enough of them.
	for i := 9; i < 13; i++ {
		hist = append(hist, Observation{Seq: i, State: Completed, Value: 0, Params: space.Params{"x": 0.5, "n": int64(50), BudgetParam: int64(3)}})
	}
	req := Request{Space: sp, Goal: Maximize, Seed: 2, History: hist, Seqs: []int{13}}
	pb, err := bo.Suggest(req)
	if err != nil {
		t.Fatal(err)
	}
	ph, _ := hb.Suggest(req)
	if reflect.DeepEqual(withoutBudget(pb[0]), withoutBudget(ph[0])) {
		t.Fatalf("bohb proposed hyperband's random draw %v", pb[0])
	}
	if !sp.Contains(withoutBudget(pb[0])) || pb[0][BudgetParam] != int64(3) {
		t.Fatalf("bohb proposal %v", pb[0])
	}
}

func TestHyperbandSettings(t *testing.T) {
	for _, tc := range []struct {
		in   map[string]any
		sp   *space.Space
		want string
	}{
		{map[string]any{}, hbSpace(), `"max_budget" is required`},
		{map[string]any{"max_budget": 9.0, "min_budget": 10.0}, hbSpace(), "must not exceed max_budget"},
		{map[string]any{"max_budget": 9.0, "eta": 1.0}, hbSpace(), `"eta" must be at least 2`},
		{map[string]any{"max_budget": 9.0}, &space.Space{Params: []space.Param{{Name: BudgetParam, Kind: space.Uniform, Args: []float64{0, 1}}}}, "remove it from the search space"},
	} {
		if _, err := New("hyperband", tc.in, tc.sp); err == nil || !contains(err.Error(), tc.want) {
			t.Errorf("%v: err = %v, want %q", tc.in, err, tc.want)
		}
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

// Settings inside the documented ranges: the schedule is laid out in
// closed form, so building the tuner allocates the same little whatever
// the budget, and a round too large for any max_trials is refused at
// max_budget saying what to change.
func TestHyperbandHugeBudgetBounded(t *testing.T) {
	for _, tc := range []struct {
		in   map[string]any
		want string // "" for accepted
	}{
		{map[string]any{"max_budget": 1e6, "eta": 2.0}, ""},
		{map[string]any{"max_budget": 1e8, "eta": 2.0}, ""},
		{map[string]any{"max_budget": 1e12, "min_budget": 1e-9, "eta": 2.0}, "Raise min_budget to 0.0008882 or more"},
		{map[string]any{"max_budget": 1e12, "min_budget": 1e-9, "eta": 1e11}, ""},
	} {
		for _, name := range []string{"hyperband", "bohb"} {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			_, err := New(name, tc.in, hbSpace())
			runtime.ReadMemStats(&after)
			if used := after.TotalAlloc - before.TotalAlloc; used > 256<<10 {
				t.Fatalf("%s %v allocated %d bytes", name, tc.in, used)
			}
			if tc.want != "" {
				var ae *decl.AttrError
				if !errors.As(err, &ae) || ae.Attr != "max_budget" || !contains(err.Error(), tc.want) {
					t.Fatalf("%s %v: err = %v, want %q at max_budget", name, tc.in, err, tc.want)
				}
				continue
			}
			if err != nil {
				t.Fatalf("%s %v: %v", name, tc.in, err)
			}
		}
	}
	// A trial deep in a large round gets its slot's budget at once:
	// max_budget 1e8, eta 2 has s_max 26; its first bracket's rung 0 has
	// 2^26 trials at budget round(1e8/2^26) = 1, its rung 1 2^25 at 3.
	tn, _ := New("hyperband", map[string]any{"max_budget": 1e8, "eta": 2.0}, hbSpace())
	got, err := tn.Suggest(Request{Space: hbSpace(), Seqs: []int{1<<26 - 1}})
	if err != nil || got[0][BudgetParam] != int64(1) {
		t.Fatalf("slot 2^26-1: %v %v", got, err)
	}
	pending := []Observation{{Seq: 0, Params: got[0], State: Pending}}
	_, err = tn.Suggest(Request{Space: hbSpace(), History: pending, Seqs: []int{1 << 26}})
	var wait *WaitError
	if !errors.As(err, &wait) || !contains(wait.Why, "rung 0 of bracket 26 (trials 0-67108863)") {
		t.Fatalf("slot 2^26: %v", err)
	}
}
