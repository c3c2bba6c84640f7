// Command loadstate times state.Manager.Load on a state directory, as a
// command starting up does: wall time and the CPU time (user+sys) of each
// load, medians of -n runs. On a loaded machine the CPU time is the figure
// that says what the load costs. A benchmark fixture, not part of trialform.
package main

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"sort"
	"syscall"
	"time"

	"github.com/trialform/trialform/state"
)

func cpu() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func main() {
	dir := flag.String("dir", "", "state directory (the .trialform directory)")
	n := flag.Int("n", 5, "loads")
	flag.Parse()
	if *dir == "" {
		fmt.Fprintln(os.Stderr, "loadstate: -dir is required")
		os.Exit(2)
	}
	var walls, cpus []time.Duration
	trials := 0
	for range *n {
		runtime.GC()
		w0, c0 := time.Now(), cpu()
		s, err := state.NewManager(*dir).Load()
		if err != nil {
			fmt.Fprintln(os.Stderr, "loadstate:", err)
			os.Exit(1)
		}
		walls, cpus = append(walls, time.Since(w0)), append(cpus, cpu()-c0)
		trials = 0
		for _, e := range s.Experiments {
			trials += len(e.Trials)
		}
	}
	med := func(d []time.Duration) time.Duration {
		sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
		return d[len(d)/2]
	}
	fmt.Printf("state load, %d trials: median of %d: wall %.3f s, CPU %.3f s (min wall %.3f s)\n",
		trials, *n, med(walls).Seconds(), med(cpus).Seconds(), walls[0].Seconds())
}
