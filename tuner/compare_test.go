package tuner

import (
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// TestCompareTuners is a local quality report, not a pass/fail test: with
// TUNER_COMPARE=1 it runs every tuner in TUNER_COMPARE_TUNERS (default
// auto,tpe,cmaes,random) on the test functions for TUNER_COMPARE_TRIALS
// (200) trials and TUNER_COMPARE_SEEDS (10) seeds and logs the median
// regrets and auto's ratio to tpe.
func TestCompareTuners(t *testing.T) {
	if os.Getenv("TUNER_COMPARE") == "" {
		t.Skip("set TUNER_COMPARE=1 to run")
	}
	if v := os.Getenv("AUTO_SMIN"); v != "" {
		autoSigmaMin, _ = strconv.ParseFloat(v, 64)
	}
	if v := os.Getenv("AUTO_SMAX"); v != "" {
		autoSigmaMax, _ = strconv.ParseFloat(v, 64)
	}
	names := strings.Split(envOr("TUNER_COMPARE_TUNERS", "auto,tpe,cmaes,random"), ",")
	trials, _ := strconv.Atoi(envOr("TUNER_COMPARE_TRIALS", "200"))
	seeds, _ := strconv.Atoi(envOr("TUNER_COMPARE_SEEDS", "10"))
	fns := allFuncs()
	med := make([][]float64, len(fns))
	var wg sync.WaitGroup
	sem := make(chan bool, 16)
	for fi, fn := range fns {
		med[fi] = make([]float64, len(names))
		for ni, name := range names {
			wg.Add(1)
			go func() {
				defer wg.Done()
				sem <- true
				defer func() { <-sem }()
				tname, settings := parseTunerSpec(name)
				tn := mustNew(t, tname, settings, fn.sp)
				var rs []float64
				for s := 1; s <= seeds; s++ {
					rs = append(rs, bestOf(loop(t, tn, fn.sp, Minimize, int64(s), trials, fn.f), Minimize)-fn.min)
				}
				med[fi][ni] = median(rs)
			}()
		}
	}
	wg.Wait()
	var b strings.Builder
	fmt.Fprintf(&b, "\n%-12s", "function")
	for _, n := range names {
		fmt.Fprintf(&b, " %12s", n)
	}
	b.WriteString("   auto/tpe\n")
	logSum, k := 0.0, 0
	for fi, fn := range fns {
		fmt.Fprintf(&b, "%-12s", fn.name)
		for ni := range names {
			fmt.Fprintf(&b, " %12.4g", med[fi][ni])
		}
		if len(names) >= 2 && strings.HasPrefix(names[0], "auto") && names[1] == "tpe" {
			r := med[fi][0] / med[fi][1]
			fmt.Fprintf(&b, "   %.3g", r)
			logSum += math.Log(math.Max(r, 1e-12))
			k++
		}
		b.WriteString("\n")
	}
	if k > 0 {
		fmt.Fprintf(&b, "geometric mean auto/tpe: %.3g\n", math.Exp(logSum/float64(k)))
	}
	t.Log(b.String())
}

// parseTunerSpec reads "name" or "name:key=value;key=value" (numbers).
func parseTunerSpec(spec string) (string, map[string]any) {
	name, rest, ok := strings.Cut(spec, ":")
	if !ok {
		return name, nil
	}
	m := map[string]any{}
	for _, kv := range strings.Split(rest, ";") {
		k, v, _ := strings.Cut(kv, "=")
		f, _ := strconv.ParseFloat(v, 64)
		m[k] = f
	}
	return name, m
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}
