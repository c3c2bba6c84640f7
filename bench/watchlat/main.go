// Command watchlat measures trialform watch's latency from a file save to
// the new plan printed: it starts `trialform watch` (plan only) on a
// scratch experiment, saves an edit N times (alternating in-place writes
// and rename-saves) and times each until the plan's summary line appears
// on watch's stdout. It prints the median, p90, min and max.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

const config = `search_space "s" {
  param "x"  { uniform = [0, 1] }
  param "lr" { loguniform = [0.0001, 0.1] }
  param "k"  { choice = ["a", "b", "c"] }
}

experiment "lat" {
  search_space = search_space.s
  tuner "tpe" {
    seed = 1
  }
  max_trials  = %d
  concurrency = 4
  trial {
    command = "true"
  }
}
`

func main() {
	bin := flag.String("bin", "bin/trialform", "trialform binary")
	n := flag.Int("n", 20, "saves to time")
	flag.Parse()
	abs, err := filepath.Abs(*bin)
	check(err)
	dir, err := os.MkdirTemp("", "watchlat")
	check(err)
	defer os.RemoveAll(dir)
	main := filepath.Join(dir, "main.hcl")
	check(os.WriteFile(main, []byte(fmt.Sprintf(config, 100)), 0o644))

	cmd := exec.Command(abs, "-chdir="+dir, "watch", "-no-color", "-interval", "1h")
	out, err := cmd.StdoutPipe()
	check(err)
	cmd.Stderr = os.Stderr
	check(cmd.Start())
	defer func() { cmd.Process.Signal(os.Interrupt); cmd.Wait() }()
	plans := make(chan time.Time, 16)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "Plan: ") || strings.HasPrefix(sc.Text(), "No changes.") {
				plans <- time.Now()
			}
		}
		close(plans)
	}()
	wait := func() time.Time {
		select {
		case t, ok := <-plans:
			if !ok {
				fmt.Fprintln(os.Stderr, "watch exited")
				os.Exit(1)
			}
			return t
		case <-time.After(10 * time.Second):
			fmt.Fprintln(os.Stderr, "no plan within 10s")
			os.Exit(1)
		}
		panic("unreachable")
	}
	wait() // the first plan

	var lat []time.Duration
	for i := 0; i < *n; i++ {
		time.Sleep(300 * time.Millisecond) // past the previous burst's debounce
		src := []byte(fmt.Sprintf(config, 101+i))
		t0 := time.Now()
		if i%2 == 0 {
			check(os.WriteFile(main, src, 0o644))
		} else {
			tmp := main + ".tmp"
			check(os.WriteFile(tmp, src, 0o644))
			check(os.Rename(tmp, main))
		}
		lat = append(lat, wait().Sub(t0))
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	ms := func(d time.Duration) string { return fmt.Sprintf("%.0f ms", float64(d)/1e6) }
	fmt.Printf("watch: file save -> plan printed, %d saves: median %s, p90 %s, min %s, max %s (target: median < 300 ms; includes the 200 ms debounce)\n",
		len(lat), ms(lat[len(lat)/2]), ms(lat[len(lat)*9/10]), ms(lat[0]), ms(lat[len(lat)-1]))
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
