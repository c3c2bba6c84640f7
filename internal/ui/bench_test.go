package ui_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/trialform/trialform/state"
)

// TestDashboardBench prints the dashboard's numbers on a state of 10,000
// trials with 100 intermediate points each (bench/genstate): API answer
// times, the experiment page's first render in headless chromium, and how
// many table rows the DOM holds. A benchmark, not a timed test: it asserts
// only that the page works (every chart paints, the table is virtual); run
// it with `make bench-ui` (TRIALFORM_UI_BENCH=1).
func TestDashboardBench(t *testing.T) {
	if os.Getenv("TRIALFORM_UI_BENCH") != "1" {
		t.Skip("set TRIALFORM_UI_BENCH=1 (make bench-ui)")
	}
	dir := filepath.Join(repoRoot, "bin", "bench-ui-state")
	if _, err := os.Stat(filepath.Join(dir, ".trialform", "state.json")); err != nil {
		t.Logf("generating 10,000 trials x 100 points in %s (once; about a minute)", dir)
		cmd := exec.Command("go", "run", "./bench/genstate", "-n", "10000", "-intermediate", "100", "-dir", dir)
		cmd.Dir = repoRoot
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("genstate: %v\n%s", err, out)
		}
	}
	base := strings.TrimSuffix(startUI(t, dir, "-addr", "127.0.0.1:0"), "/")
	timeGet := func(p string) (time.Duration, int) {
		start := time.Now()
		resp, err := http.Get(base + p)
		if err != nil {
			t.Fatal(err)
		}
		n, _ := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %d", p, resp.StatusCode)
		}
		return time.Since(start), int(n)
	}
	// Wait for the server's first read of the state to end.
	timeGet("/api/overview")
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		fmt.Printf("load average: %s", b)
	}
	fmt.Printf("%-62s %10s %10s %10s\n", "dashboard API, 10,000 trials x 100 points", "first", "median", "bytes")
	for _, p := range []string{
		"/api/overview", "/api/experiments/big", "/api/experiments/big/trials",
		"/api/experiments/big/trials?q=metric:%3E0.5,params.opt:adam&sort=-metric",
		"/api/experiments/big/curves", "/api/experiments/big/curves?trials=t0001,t0002,t0003",
		"/api/experiments/big/importance", "/api/experiments/big/trials/t0042",
		"/api/experiments/big/trials/t0042/scalars", "/api/compare", "/api/history",
	} {
		first, n := timeGet(p)
		var ds []time.Duration
		for i := 0; i < 5; i++ {
			d, _ := timeGet(p)
			ds = append(ds, d)
		}
		sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
		fmt.Printf("%-62s %10s %10s %10d\n", p, first.Round(time.Millisecond), ds[2].Round(time.Millisecond), n)
	}

	b := newBrowser(t)
	b.open(base + "/") // the browser is started and the assets cached
	for run := 0; run < 3; run++ {
		ctx, cancel := context.WithTimeout(b.ctx, 120*time.Second)
		start := time.Now()
		var tableAt time.Duration
		err := chromedp.Do(ctx, chromedp.Navigate(base+"/e/big"),
			chromedp.Poll[chromedp.Void](`document.querySelectorAll('#trials .vt-row').length > 0`,
				chromedp.WithPollingTimeout(110*time.Second), chromedp.WithPollingInterval(10*time.Millisecond)),
			chromedp.Func(func(context.Context, *chromedp.Target) error { tableAt = time.Since(start); return nil }),
			chromedp.Poll[chromedp.Void](`window.__trialform.ready && document.querySelectorAll('#trials .vt-row').length > 0 &&
			  ['history-seq','history-time','curves','importance','parallel','slice'].every((k) => {
			    const c = window.__trialform.charts[k]; if (!c) return false;
			    const cv = c.getDom().querySelector('canvas'); if (!cv || !cv.width) return false;
			    const d = cv.getContext('2d').getImageData(0, 0, cv.width, cv.height).data;
			    for (let i = 3; i < d.length; i += 64) if (d[i] > 0) return true; return false; })`,
				chromedp.WithPollingTimeout(110*time.Second), chromedp.WithPollingInterval(20*time.Millisecond)))
		cancel()
		if err != nil {
			t.Fatalf("experiment page: %v (console: %v)", err, b.consoleErrors())
		}
		took := time.Since(start)
		var tm string
		b.eval(`JSON.stringify(Object.assign({boot: window.__trialform.boot}, window.__trialform.timings))`, &tm)
		fmt.Printf("experiment page run %d: table shown %s, every chart painted %s (steps, ms: %s)\n", run+1, tableAt.Round(time.Millisecond), took.Round(time.Millisecond), tm)
	}
	measureLive(t, b, dir, "big", "10,000 trials")
	small := fixture(t, 60)
	smallBase := strings.TrimSuffix(startUI(t, small, "-addr", "127.0.0.1:0"), "/")
	b.open(smallBase + "/e/demo")
	measureLive(t, b, small, "demo", "60 trials")
	b.open(base + "/e/big")

	var s string
	b.eval(`(() => { const v = document.getElementById('trials'); v.scrollTop = v.scrollHeight / 2; return ''; })()`, &s)
	b.do(chromedp.Poll[chromedp.Void](`(() => { const r = document.querySelector('#trials .vt-row'); return r && r.dataset.id !== 't0000'; })()`, chromedp.WithPollingTimeout(60*time.Second)))
	b.eval(`String(document.querySelectorAll('#trials .vt-row').length) + ' rows in the DOM for ' + document.getElementById('row-count').textContent`, &s)
	fmt.Printf("table scrolled to the middle: %s\n", s)
	if strings.HasPrefix(s, "10000 ") {
		t.Errorf("the table is not virtual: %s", s)
	}
	b.screenshot("bench-experiment")
	b.noErrors("bench experiment page")
}

// measureLive writes the state with one more trial and times until the
// open experiment page's table shows it.
func measureLive(t *testing.T, b *browser, dir, exp, what string) {
	t.Helper()
	var before, after string
	b.eval(trialsFetchesJS(exp), &before)
	defer func() {
		b.eval(trialsFetchesJS(exp), &after)
		fmt.Printf("live updates (%s): the page fetched the whole trials list %s -> %s times\n", what, before, after)
	}()
	for run := 0; run < 5; run++ {
		var junk string
		b.eval(`String(window.__trialform.eventAt = window.__trialform.patchedAt = 0)`, &junk)
		m := state.NewManager(filepath.Join(dir, ".trialform"))
		st, err := m.Load()
		if err != nil {
			t.Fatal(err)
		}
		e := st.Experiments[exp]
		tr := *e.Trials["t0000"]
		tr.ID, tr.Seq = fmt.Sprintf("live%d", time.Now().UnixNano()), e.NextSeq
		e.NextSeq++
		e.Trials[tr.ID] = &tr
		want := fmt.Sprintf("%d of %d trials", len(e.Trials), len(e.Trials))
		if err := m.Save(st); err != nil {
			t.Fatal(err)
		}
		saved := time.Now()
		ctx, cancel := context.WithTimeout(b.ctx, 60*time.Second)
		err = chromedp.Do(ctx, chromedp.Poll[chromedp.Void](fmt.Sprintf(`document.getElementById('row-count').textContent === %q`, want),
			chromedp.WithPollingTimeout(60*time.Second), chromedp.WithPollingInterval(10*time.Millisecond)))
		cancel()
		if err != nil {
			t.Fatalf("live update: %v", err)
		}
		took := time.Since(saved).Round(time.Millisecond)
		// The page's clock is this machine's: when the event arrived and
		// when it was patched in ("-": a full fetch); both may precede
		// the end of Save (the page reads the record before its fsync).
		var at string
		b.eval(`JSON.stringify([window.__trialform.eventAt || 0, window.__trialform.patchedAt || 0])`, &at)
		var ms [2]int64
		json.Unmarshal([]byte(at), &ms)
		since := func(ms int64) string {
			if ms == 0 {
				return "-"
			}
			return time.UnixMilli(ms).Sub(saved).Round(time.Millisecond).String()
		}
		fmt.Printf("live update (%s), state written -> table shows the new trial, run %d: %s (in the page: event %s, patched %s)\n", what, run+1, took, since(ms[0]), since(ms[1]))
	}
}
