// Command ctllat measures `trialform controller` (make bench): the time
// from a commit that raises max_trials to the first new trial running,
// with the -interval poll and with the push webhook, and the controller's
// memory with 10,000 trials in its state. It runs the real binary against
// a real git repository (a local path) with real python3 trials on the
// local platform. It prints numbers and asserts nothing (targets are in
// docs/benchmarks.md). It is a benchmark, not part of trialform.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing/object"
)

const hookSecret = "bench-hook-secret"

func main() {
	bin := flag.String("bin", "bin/trialform", "the trialform binary")
	genstate := flag.String("genstate", "bin/genstate", "the genstate binary (for -rss)")
	n := flag.Int("n", 5, "commits measured per mode")
	interval := flag.Duration("interval", 5*time.Second, "the controller's -interval")
	rssTrials := flag.Int("rss-trials", 10000, "trials in the state for the memory measure (0: skip)")
	passes := flag.Int("passes", 5, "passes (plans) before the memory is read")
	only := flag.String("only", "", "latency or rss: run that part alone")
	flag.Parse()
	abs, err := filepath.Abs(*bin)
	check(err)
	*bin = abs
	if abs, err = filepath.Abs(*genstate); err == nil {
		*genstate = abs
	}
	work, err := os.MkdirTemp("", "ctllat-")
	check(err)
	defer os.RemoveAll(work)
	if *only != "rss" {
		latency(*bin, filepath.Join(work, "lat"), *n, *interval)
	}
	if *only != "latency" && *rssTrials > 0 {
		memory(*bin, *genstate, filepath.Join(work, "rss"), *rssTrials, *passes)
	}
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "ctllat:", err)
		os.Exit(1)
	}
}

// The trial connects to the bench as soon as its process runs (the event
// measured), then holds until the bench closes the connection, then
// reports.
const trialPy = `import socket, sys
s = socket.create_connection((sys.argv[1], int(sys.argv[2])))
s.sendall(b"running\n")
while s.recv(1):
    pass
import trialform
trialform.report(float(sys.argv[3]))
`

func hcl(host, port string, maxTrials int) string {
	return fmt.Sprintf(`search_space "s" {
  param "x" { uniform = [0, 1] }
}

experiment "lat" {
  search_space = search_space.s
  tuner "random" {
    seed = 1
  }
  max_trials  = %d
  concurrency = %d
  trial {
    command = "python3 trial.py %s %s ${param.x}"
  }
}
`, maxTrials, maxTrials, host, port)
}

// repo is a git repository the bench commits to (go-git: no git binary).
type repo struct {
	dir string
	r   *git.Repository
}

func newRepo(dir string) *repo {
	r, err := git.PlainInit(dir, false)
	check(err)
	return &repo{dir: dir, r: r}
}

func (g *repo) commit(msg string, files map[string]string) {
	wt, err := g.r.Worktree()
	check(err)
	for name, text := range files {
		check(os.WriteFile(filepath.Join(g.dir, name), []byte(text), 0o644))
		_, err := wt.Add(name)
		check(err)
	}
	_, err = wt.Commit(msg, &git.CommitOptions{Author: &object.Signature{Name: "bench", Email: "bench@example.com", When: time.Now()}})
	check(err)
}

func (g *repo) branch() string {
	h, err := g.r.Head()
	check(err)
	return h.Name().Short()
}

// controller is a running `trialform controller`; its JSON log lines
// arrive on events.
type controller struct {
	cmd    *exec.Cmd
	addr   string
	events chan map[string]any
}

func startController(bin, repoDir, branch, workDir string, interval time.Duration) *controller {
	check(os.MkdirAll(workDir, 0o755))
	cmd := exec.Command(bin, "controller", "-repo", repoDir, "-branch", branch, "-work-dir", workDir,
		"-interval", interval.String(), "-listen", "127.0.0.1:0")
	cmd.Env = append(os.Environ(), "TRIALFORM_WEBHOOK_TOKEN="+hookSecret)
	out, err := cmd.StdoutPipe()
	check(err)
	logf, err := os.Create(filepath.Join(workDir, "ctl.log"))
	check(err)
	cmd.Stderr = logf
	check(cmd.Start())
	c := &controller{cmd: cmd, events: make(chan map[string]any, 1024)}
	lines := bufio.NewScanner(io.TeeReader(out, logf))
	lines.Buffer(make([]byte, 1<<20), 1<<24)
	addr := make(chan string, 1)
	go func() {
		for lines.Scan() {
			var ev map[string]any
			if json.Unmarshal(lines.Bytes(), &ev) != nil {
				continue
			}
			ev["at"] = time.Now()
			if ev["msg"] == "listening" {
				addr <- fmt.Sprint(ev["addr"])
			}
			select {
			case c.events <- ev:
			default:
			}
		}
		close(c.events)
	}()
	select {
	case c.addr = <-addr:
	case <-time.After(60 * time.Second):
		check(fmt.Errorf("the controller did not listen within 60 s (log: %s)", logf.Name()))
	}
	return c
}

func (c *controller) stop() {
	c.cmd.Process.Signal(os.Interrupt)
	done := make(chan struct{})
	go func() { c.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		c.cmd.Process.Kill()
		<-done
	}
}

func (c *controller) hook() {
	req, _ := http.NewRequest(http.MethodPost, "http://"+c.addr+"/hook", strings.NewReader("{}"))
	req.Header.Set("Authorization", "Bearer "+hookSecret)
	resp, err := http.DefaultClient.Do(req)
	check(err)
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		check(fmt.Errorf("POST /hook: %s", resp.Status))
	}
}

// latency commits n raises of max_trials per mode and times each commit
// to the new trial's process running.
func latency(bin, dir string, n int, interval time.Duration) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	check(err)
	defer ln.Close()
	running := make(chan time.Time, 64)
	var (
		mu    sync.Mutex
		conns []net.Conn
	)
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			conn.Read(make([]byte, 8))
			running <- time.Now()
			mu.Lock()
			conns = append(conns, conn)
			mu.Unlock()
		}
	}()
	host, port, _ := net.SplitHostPort(ln.Addr().String())
	g := newRepo(filepath.Join(dir, "repo"))
	trials := 1
	g.commit("one trial", map[string]string{"main.hcl": hcl(host, port, trials), "trial.py": trialPy})
	c := startController(bin, g.dir, g.branch(), filepath.Join(dir, "work"), interval)
	defer c.stop()
	wait := func(what string) time.Time {
		select {
		case t := <-running:
			return t
		case <-time.After(interval + 120*time.Second):
			check(fmt.Errorf("%s: no trial ran within %s (log: %s)", what, interval+120*time.Second, filepath.Join(dir, "work", "ctl.log")))
		}
		return time.Time{}
	}
	wait("the first trial")
	// events so far are of the first trial
	drain(c.events)
	measure := func(mode string) []float64 {
		var lat []float64
		for i := 0; i < n; i++ {
			if mode == "poll" {
				// a commit at a random point of the poll cycle
				time.Sleep(time.Duration(rand.Int64N(int64(interval))))
			}
			trials++
			g.commit(fmt.Sprintf("max_trials = %d", trials), map[string]string{"main.hcl": hcl(host, port, trials)})
			t0 := time.Now()
			if mode == "webhook" {
				c.hook()
			}
			t1 := wait(fmt.Sprintf("%s commit %d", mode, i+1))
			lat = append(lat, t1.Sub(t0).Seconds())
		}
		return lat
	}
	poll := measure("poll")
	hook := measure("webhook")
	status := statusCounts(bin, filepath.Join(dir, "work"))
	fmt.Printf("controller: commit raising max_trials -> first new trial running (real python3 trial, local platform, -interval %s, median of %d; target < 10 s):\n", interval, n)
	fmt.Printf("  poll:    median %.2f s, min %.2f s, max %.2f s (commits at random points of the interval)\n", median(poll), slices.Min(poll), slices.Max(poll))
	fmt.Printf("  webhook: median %.3f s, min %.3f s, max %.3f s (POST /hook right after the commit)\n", median(hook), slices.Min(hook), slices.Max(hook))
	fmt.Printf("  trials -json after: %s (want %d RUNNING)  load %s\n", status, trials, loadavg())
	mu.Lock()
	for _, conn := range conns {
		conn.Close()
	}
	mu.Unlock()
}

func drain(ch chan map[string]any) {
	for {
		select {
		case <-ch:
		default:
			return
		}
	}
}

// statusCounts is `trialform trials -json` in the controller's work
// directory (its state), counted by status.
func statusCounts(bin, workDir string) string {
	out, err := exec.Command(bin, "-chdir="+workDir, "trials", "-json").Output()
	if err != nil {
		return "trials -json failed: " + err.Error()
	}
	var rows []struct {
		Status string `json:"status"`
	}
	if err := json.Unmarshal(out, &rows); err != nil {
		return "trials -json: " + err.Error()
	}
	counts := map[string]int{}
	for _, r := range rows {
		counts[r.Status]++
	}
	return fmt.Sprint(counts)
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func loadavg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	return strings.Fields(string(b) + " ?")[0]
}

// memory: a real apply of 100 trivial trials grown to n by genstate
// -like, in the controller's work directory; the same definitions
// committed; the controller started on it; after some passes, its peak
// and current resident memory from /proc.
func memory(bin, genstate, dir string, n, passes int) {
	real := filepath.Join(dir, "real")
	check(os.MkdirAll(real, 0o755))
	const def = `search_space "s" {
  param "x" { randint = [0, 1000000000] }
}
experiment "bench" {
  search_space = search_space.s
  tuner "random" {
    seed = 1
  }
  max_trials  = 100
  concurrency = 16
  trial {
    command = "echo 'trialform: {\"default\": '${param.x}'}'"
  }
}
`
	check(os.WriteFile(filepath.Join(real, "main.hcl"), []byte(def), 0o644))
	run(bin, "-chdir="+real, "apply", "-auto-approve", "-wait")
	work := filepath.Join(dir, "work")
	run(genstate, "-like", real, "-n", strconv.Itoa(n), "-dir", work)
	grown, err := os.ReadFile(filepath.Join(work, "main.hcl"))
	check(err)
	check(os.Remove(filepath.Join(work, "main.hcl")))
	g := newRepo(filepath.Join(dir, "repo"))
	g.commit("the grown experiment", map[string]string{"main.hcl": string(grown)})
	t0 := time.Now()
	c := startController(bin, g.dir, g.branch(), work, time.Hour)
	defer c.stop()
	pid := c.cmd.Process.Pid
	// Each webhook starts a pass; the plan count in /metrics says when
	// it is done.
	want := 1
	waitPlans(c.addr, want)
	first := time.Since(t0)
	for i := 1; i < passes; i++ {
		c.hook()
		want++
		waitPlans(c.addr, want)
	}
	hwm, rss := procStatus(pid, "VmHWM"), procStatus(pid, "VmRSS")
	fmt.Printf("controller memory, %d finished trials in state (genstate -like of a real apply of 100), %d passes (first pass done %.2f s after start): VmHWM %d MB, VmRSS %d MB (target < 300 MB)  load %s\n",
		n, passes, first.Seconds(), hwm/1024, rss/1024, loadavg())
}

func run(name string, args ...string) {
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		check(fmt.Errorf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out))
	}
}

var planCount = regexp.MustCompile(`(?m)^trialform_plan_duration_seconds_count (\d+)$`)

// waitPlans waits until the controller has planned want times (reading
// /metrics: the pass has no event of its own when nothing changes).
func waitPlans(addr string, want int) {
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Second)
	defer cancel()
	for ctx.Err() == nil {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if m := planCount.FindSubmatch(b); m != nil {
				if got, _ := strconv.Atoi(string(m[1])); got >= want {
					return
				}
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	check(fmt.Errorf("the controller did not plan %d times within 300 s", want))
}

// procStatus is a "Vm…: N kB" field of /proc/PID/status, in kB.
func procStatus(pid int, field string) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	check(err)
	for _, line := range bytes.Split(b, []byte("\n")) {
		if k, v, ok := strings.Cut(string(line), ":"); ok && k == field {
			kb, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			return kb
		}
	}
	check(fmt.Errorf("/proc/%d/status has no %s", pid, field))
	return 0
}
