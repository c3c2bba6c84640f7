package ui_test

// Browser tests: the real `trialform ui` binary, Debian's chromium driven by
// chromedp. Screenshots of every page go to bin/ui-screens/.

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	neturl "net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/trialform/trialform/internal/testdeps"
	"github.com/trialform/trialform/state"
)

var (
	buildOnce sync.Once
	binDir    string
	buildErr  error
	repoRoot  = func() string {
		_, file, _, _ := runtime.Caller(0)
		return filepath.Join(filepath.Dir(file), "..", "..")
	}()
)

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// trialformBin builds the CLI and the supervisor once.
func trialformBin(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		binDir, buildErr = os.MkdirTemp("", "trialform-ui-bin-")
		if buildErr != nil {
			return
		}
		for _, b := range [][2]string{{"trialform", "./cmd/trialform"}, {"trialform-supervisor", "./cmd/trialform-supervisor"}} {
			cmd := exec.Command("go", "build", "-o", filepath.Join(binDir, b[0]), b[1])
			cmd.Dir = repoRoot
			if out, err := cmd.CombinedOutput(); err != nil {
				buildErr = fmt.Errorf("build %s: %v\n%s", b[0], err, out)
				return
			}
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return filepath.Join(binDir, "trialform")
}

// startUI runs `trialform -chdir DIR ui ARGS...` and returns the URL it
// prints.
func startUI(t *testing.T, dir string, args ...string) string {
	t.Helper()
	url, _ := startUIStoppable(t, dir, args...)
	return url
}

// startUIStoppable is startUI that also returns a function stopping the
// server (as Ctrl-C does).
func startUIStoppable(t *testing.T, dir string, args ...string) (string, func()) {
	t.Helper()
	cmd := exec.Command(trialformBin(t), append([]string{"-chdir", dir, "ui"}, args...)...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cmd.Process.Signal(os.Interrupt)
			cmd.Wait()
		})
	}
	t.Cleanup(func() {
		stop()
		if t.Failed() {
			t.Logf("trialform ui stderr:\n%s", stderr.String())
		}
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("trialform ui printed no URL: %v\n%s", err, stderr.String())
	}
	go io.Copy(io.Discard, out)
	return strings.TrimSpace(line), stop
}

type browser struct {
	t       *testing.T
	ctx     context.Context
	mu      sync.Mutex
	errs    []string // console errors, exceptions, failed loads
	dialogs []string // alert/confirm/prompt: script ran that should not
}

func newBrowser(t *testing.T) *browser {
	t.Helper()
	path := ""
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			path = p
			break
		}
	}
	if path == "" {
		testdeps.Require(t, "chromium", "not installed (scripts/deps.sh installs it: apt-get install chromium)")
	}
	actx, cancelA := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(path),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.WindowSize(1400, 1000),
		chromedp.UserDataDir(t.TempDir()),
	)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() { cancel(); cancelA() })
	b := &browser{t: t, ctx: ctx}
	msgs := chromedp.Console(ctx)
	dialogs := chromedp.Events(ctx, page.JavascriptDialogOpening)
	go func() {
		for m, err := range msgs {
			if err != nil {
				return
			}
			if m.Type == chromedp.ConsoleError || m.IsException() {
				b.mu.Lock()
				b.errs = append(b.errs, m.String())
				b.mu.Unlock()
			}
		}
	}()
	go func() {
		for ev, err := range dialogs {
			if err != nil {
				return
			}
			b.mu.Lock()
			b.dialogs = append(b.dialogs, string(ev.Type)+": "+ev.Message)
			b.mu.Unlock()
			chromedp.Call(ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: false})
		}
	}()
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1400, 1000)); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	return b
}

// lostContext reports the error of a step that ran while the page's
// JavaScript context was being replaced (a navigation that chromedp had
// not seen complete yet): the step did not run and can run again.
func lostContext(err error) bool {
	return err != nil && (strings.Contains(err.Error(), "Cannot find context with specified id") ||
		strings.Contains(err.Error(), "Execution context was destroyed") ||
		strings.Contains(err.Error(), "Inspected target navigated or closed"))
}

// do runs steps that can run again (polls, evaluations): one that ran
// while the page's context was replaced runs again, until its timeout (a
// context is replaced in milliseconds; a loaded machine may replace it
// under several tries in a row).
func (b *browser) do(steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 90*time.Second)
	defer cancel()
	err := chromedp.Do(ctx, steps...)
	for lostContext(err) && ctx.Err() == nil {
		time.Sleep(50 * time.Millisecond)
		err = chromedp.Do(ctx, steps...)
	}
	if err != nil {
		b.t.Fatalf("browser: %v (console errors: %v)", err, b.consoleErrors())
	}
}

// doOnce runs steps that must not run twice (navigations, typing).
func (b *browser) doOnce(steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 90*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		b.t.Fatalf("browser: %v (console errors: %v)", err, b.consoleErrors())
	}
}

func (b *browser) eval(js string, out *string) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 60*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[string](js))
	for lostContext(err) && ctx.Err() == nil {
		time.Sleep(50 * time.Millisecond)
		v, err = chromedp.Run(ctx, chromedp.Evaluate[string](js))
	}
	if err != nil {
		b.t.Fatalf("evaluate %s: %v", js, err)
	}
	*out = v
}

func (b *browser) consoleErrors() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.errs...)
}

// open navigates and waits until the new page rendered: its path is the
// one asked for, so a wait that began while the previous page still ran
// (and saw it ready) cannot end early, leaving the next step to run in a
// context the navigation then destroys ("Cannot find context with
// specified id", once in CI).
func (b *browser) open(url string) {
	b.t.Helper()
	u, err := neturl.Parse(url)
	if err != nil {
		b.t.Fatal(err)
	}
	path := u.EscapedPath()
	if path == "" {
		path = "/"
	}
	b.doOnce(chromedp.Navigate(url))
	b.do(chromedp.Poll[chromedp.Void](fmt.Sprintf(`location.pathname === %q && window.__trialform && window.__trialform.ready && window.__trialform.renders > 0`, path), chromedp.WithPollingTimeout(60*time.Second)))
}

// screenshot saves the viewport as bin/ui-screens/NAME.png.
func (b *browser) screenshot(name string) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 60*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		b.t.Fatalf("screenshot: %v", err)
	}
	dir := filepath.Join(repoRoot, "bin", "ui-screens")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
		b.t.Fatal(err)
	}
}

// chartsJS reports, per chart, its series count and how many sampled
// pixels of its canvas are painted, once every chart painted.
const chartsJS = `(() => {
  const out = {};
  for (const [k, c] of Object.entries(window.__trialform.charts)) {
    const cv = c.getDom().querySelector('canvas');
    let painted = 0;
    if (cv && cv.width > 0) {
      const d = cv.getContext('2d').getImageData(0, 0, cv.width, cv.height).data;
      for (let i = 3; i < d.length; i += 64) if (d[i] > 0) painted++;
    }
    out[k] = c.getOption().series.length + ':' + painted;
  }
  return JSON.stringify(out);
})()`

// checkCharts waits until every named chart painted and checks its
// series count.
func (b *browser) checkCharts(want map[string]int) {
	b.t.Helper()
	names := []string{}
	for k := range want {
		names = append(names, fmt.Sprintf("%q", k))
	}
	b.do(chromedp.Poll[chromedp.Void](fmt.Sprintf(`(() => { const c = window.__trialform.charts; return [%s].every((k) => {
	  if (!c[k]) return false; const cv = c[k].getDom().querySelector('canvas'); if (!cv || !cv.width) return false;
	  const d = cv.getContext('2d').getImageData(0, 0, cv.width, cv.height).data;
	  for (let i = 3; i < d.length; i += 64) if (d[i] > 0) return true; return false; }); })()`, strings.Join(names, ",")),
		chromedp.WithPollingTimeout(60*time.Second), chromedp.WithPollingInterval(100*time.Millisecond)))
	var got string
	b.eval(chartsJS, &got)
	for k, n := range want {
		if !strings.Contains(got, fmt.Sprintf(`"%s":"%d:`, k, n)) {
			b.t.Errorf("chart %s: want %d series, got %s", k, n, got)
		}
	}
}

func (b *browser) noErrors(page string) {
	b.t.Helper()
	var junk string
	b.eval(`(() => { const m = document.body.innerText.match(/\b(null|undefined|NaN)\b|\[object Object\]/); return m ? m[0] : ''; })()`, &junk)
	if junk != "" {
		b.t.Errorf("%s: the page shows %q", page, junk)
	}
	if errs := b.consoleErrors(); len(errs) > 0 {
		b.t.Errorf("%s: console errors: %v", page, errs)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.dialogs) > 0 {
		b.t.Errorf("%s: a dialog opened (script ran): %v", page, b.dialogs)
	}
}

func TestBrowserPages(t *testing.T) {
	if testing.Short() {
		t.Skip("browser tests are not short")
	}
	dir := fixture(t, 60)
	// "other" is paused: the overview and its page say so.
	m := state.NewManager(filepath.Join(dir, ".trialform"))
	st, err := m.Load()
	if err != nil {
		t.Fatal(err)
	}
	st.Experiments["other"].Paused = true
	// A FAILED trial of demo that had reported a value better than any
	// (demo minimizes): no result, so no chart counts it.
	var failedID string
	for _, tr := range st.Experiments["demo"].SortedTrials() {
		if tr.Status == state.Failed {
			v := -1000.0
			tr.Value, failedID = &v, tr.ID
			break
		}
	}
	if failedID == "" {
		t.Fatal("the fixture has no FAILED trial")
	}
	if err := m.Save(st); err != nil {
		t.Fatal(err)
	}
	base := strings.TrimSuffix(startUI(t, dir, "-addr", "127.0.0.1:0"), "/")
	b := newBrowser(t)

	// Overview.
	b.open(base + "/")
	var s string
	b.eval(`document.querySelector('#overview tbody').innerText`, &s)
	if !strings.Contains(s, "demo") || !strings.Contains(s, "other") || !strings.Contains(s, "tpe") {
		t.Errorf("overview: %q", s)
	}
	var shown string
	b.eval(`JSON.stringify([...document.querySelectorAll('#overview tbody tr')].filter((r) => r.querySelector('.paused')).map((r) => r.cells[0].innerText.split('\n')[0]))`, &shown)
	if shown != `["other"]` {
		t.Errorf("overview: the experiments shown paused are %s, want [\"other\"]", shown)
	}
	// The budget as the CLI says it (issue 25: "budget 16/8" across generations).
	if !regexp.MustCompile(`\b\d+/80 trials done\b`).MatchString(s) {
		t.Errorf("overview budget: %q", s)
	}
	// Where the state lives (issue 26).
	b.eval(`document.getElementById('backend').textContent`, &s)
	if !regexp.MustCompile(`^state: local backend, .*\.trialform · serial \d+$`).MatchString(s) {
		t.Errorf("overview backend line: %q", s)
	}
	b.screenshot("overview")
	b.noErrors("overview")

	// Experiment page: every chart, with its series.
	b.open(base + "/e/demo")
	b.checkCharts(map[string]int{"history-seq": 2, "history-time": 2, "curves": 3, "importance": 1, "parallel": 2, "slice": 4})
	b.eval(`document.getElementById('row-count').textContent`, &s)
	if s != "60 of 60 trials" {
		t.Errorf("row count %q", s)
	}
	// The failed trial's -1000 is in no chart: not the history's points nor
	// its best so far, not the parallel coordinates, not the slices.
	b.eval(`JSON.stringify(['history-seq', 'history-time', 'parallel', 'slice'].map((k) => {
	  const o = window.__trialform.charts[k].getOption();
	  return k + ':' + JSON.stringify(o.series.map((x) => x.data)).includes('-1000');
	}))`, &s)
	if s != `["history-seq:false","history-time:false","parallel:false","slice:false"]` {
		t.Errorf("a FAILED trial's value in the charts: %s", s)
	}
	b.eval(`document.querySelector('.summary').innerText`, &s)
	if !regexp.MustCompile(`budget: \d+/80 trials done · concurrency 4`).MatchString(s) {
		t.Errorf("experiment header budget: %q", s)
	}
	b.screenshot("experiment")
	b.open(base + "/e/other")
	b.eval(`document.querySelector('.summary').innerText`, &s)
	if !regexp.MustCompile(`paused: no trial runs until main\.hcl:\d+ no longer sets paused = true`).MatchString(s) {
		t.Errorf("a paused experiment's header: %q", s)
	}
	b.open(base + "/e/demo")
	b.eval(`document.querySelector('.summary').innerText`, &s)
	if strings.Contains(s, "paused") {
		t.Errorf("demo is not paused: %q", s)
	}
	b.noErrors("experiment")

	// The XSS value shows as text in the table, and no element was made of it.
	b.eval(`JSON.stringify([
	  [...document.querySelectorAll('#trials .vt-cell')].some((c) => c.textContent === '<img src=x onerror=alert(1)>'),
	  document.querySelectorAll('img').length])`, &s)
	if s != "[true,0]" {
		t.Errorf("XSS value in the table: [shown as text, img elements] = %s, want [true,0]", s)
	}

	// A query narrows the table; the URL keeps it.
	b.doOnce(chromedp.SendKeys(chromedp.ID("q"), "status:succeeded, params.opt:adam"),
		chromedp.Poll[chromedp.Void](`(() => { const t = document.getElementById('row-count').textContent; return t !== '60 of 60 trials' && / of 60 trials$/.test(t); })()`, chromedp.WithPollingTimeout(30*time.Second)))
	b.eval(`JSON.stringify([document.getElementById('row-count').textContent,
	  [...document.querySelectorAll('#trials .vt-row')].every((r) => r.innerText.includes('SUCCEEDED') && r.innerText.includes('adam')), location.search])`, &s)
	if !strings.Contains(s, `,true,"?q=status`) || strings.Contains(s, `"60 of 60`) {
		t.Errorf("query: %s", s)
	}
	b.screenshot("experiment-query")
	// A mistake gets a caret under its column.
	b.eval(`(() => { document.getElementById('q').value = ''; return ''; })()`, &s)
	b.doOnce(chromedp.SendKeys(chromedp.ID("q"), "status:succeeded, parms.lr:<1"), chromedp.WaitVisible(chromedp.ID("query-error")))
	b.eval(`document.querySelector('#query-error pre').textContent`, &s)
	if want := "status:succeeded, parms.lr:<1\n" + strings.Repeat(" ", len("status:succeeded, ")) + "^"; s != want {
		t.Errorf("caret:\n%s\nwant:\n%s", s, want)
	}
	b.screenshot("experiment-query-error")
	// The only console errors: the browser logging the 400 answers to the
	// mistaken query (one per keystroke that left it invalid).
	b.mu.Lock()
	for _, e := range b.errs {
		if !strings.Contains(e, "status of 400") {
			t.Errorf("experiment query: console error %s", e)
		}
	}
	b.errs = nil
	b.mu.Unlock()
	b.noErrors("experiment query")

	// Virtual scrolling: far fewer rows in the DOM than trials.
	b.open(base + "/e/demo")
	b.eval(`String(document.querySelectorAll('#trials .vt-row').length)`, &s)
	if s == "60" || s == "0" {
		t.Errorf("rows in the DOM: %s of 60", s)
	}

	// Trial page: params (the XSS value as text), the command line, the
	// TensorBoard scalars from the event files.
	b.open(base + "/e/demo/t/t0003")
	b.checkCharts(map[string]int{"trial-curve": 1, "scalars": 3})
	b.eval(`document.getElementById('command').textContent`, &s)
	if !strings.HasPrefix(s, "python3 train.py --opt ") {
		t.Errorf("command line %q", s)
	}
	// What it was created from (issue 27, item 6).
	b.eval(`document.getElementById('provenance').innerText`, &s)
	for _, want := range []string{"0123456789ab-dirty", "fedcba987654", "9.9.9"} {
		if !strings.Contains(s, want) {
			t.Errorf("provenance %q lacks %q", s, want)
		}
	}
	b.screenshot("trial")
	b.noErrors("trial")
	b.open(base + "/e/demo/t/t0002")
	b.eval(`JSON.stringify([document.getElementById('params').innerText.includes('<img src=x onerror=alert(1)>'), document.querySelectorAll('img').length])`, &s)
	if s != "[true,0]" {
		t.Errorf("XSS value on the trial page: %s, want [true,0]", s)
	}
	b.eval(`document.getElementById('provenance').innerText`, &s)
	if !strings.Contains(s, "not recorded") {
		t.Errorf("provenance of a trial without any: %q", s)
	}
	b.noErrors("trial with the XSS value")

	// Compare, plan, history.
	b.open(base + "/compare")
	b.checkCharts(map[string]int{"compare": 2})
	b.screenshot("compare")
	b.noErrors("compare")

	b.open(base + "/plan")
	b.do(chromedp.Poll[chromedp.Void](`document.getElementById('plan').textContent.includes('experiment.demo')`, chromedp.WithPollingTimeout(60*time.Second)))
	b.screenshot("plan")
	b.noErrors("plan")

	b.open(base + "/history")
	b.eval(`document.getElementById('history').innerText`, &s)
	if _, err := exec.LookPath("git"); err == nil && (!strings.Contains(s, "search space for demo") || !strings.Contains(s, "generation 1")) {
		t.Errorf("history: %q", s)
	}
	b.screenshot("history")
	b.noErrors("history")

	// An unknown trial is a 404 page, not a console error.
	b.open(base + "/e/demo/t/..%2F..%2Fetc")
	b.eval(`document.getElementById('app').innerText`, &s)
	if s != "Not found." {
		t.Errorf("hostile trial id: %q", s)
	}
}

const liveHCL = `search_space "s" {
  param "x" { uniform = [-2, 2] }
}

experiment "live" {
  search_space = search_space.s
  objective {
    metric = "default"
    goal   = "minimize"
  }
  tuner "random" {
    seed = 3
  }
  max_trials  = 3
  concurrency = 1
  trial {
    command = "python3 train.py"
  }
}
`

const liveTrain = `import time
import nni

p = nni.get_next_parameter()
print("trial starting", flush=True)
for i in range(4):
    time.sleep(0.6)
    nni.report_intermediate_result(p["x"] * p["x"] + 1.0 / (i + 1))
    print("epoch %d" % i, flush=True)
nni.report_final_result(p["x"] * p["x"])
`

// waitState polls the state file until cond holds (the apply process
// writes it; nothing to subscribe to across processes).
func waitState(t *testing.T, dir string, what string, cond func(*state.State) bool) {
	t.Helper()
	m := state.NewManager(filepath.Join(dir, ".trialform"))
	deadline := time.Now().Add(90 * time.Second)
	for time.Now().Before(deadline) {
		if st, err := m.Load(); err == nil && cond(st) {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("timed out waiting for %s", what)
}

func TestBrowserLiveUpdate(t *testing.T) {
	if testing.Short() {
		t.Skip("browser tests are not short")
	}
	testdeps.Python3(t)
	dir := t.TempDir()
	for name, body := range map[string]string{"main.hcl": liveHCL, "train.py": liveTrain} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	bin := trialformBin(t)
	b := newBrowser(t)
	apply := exec.Command(bin, "-chdir", dir, "apply", "-auto-approve", "-wait")
	var applyOut bytes.Buffer
	apply.Stdout, apply.Stderr = &applyOut, &applyOut
	if err := apply.Start(); err != nil {
		t.Fatal(err)
	}
	applyDone := make(chan error, 1)
	go func() { applyDone <- apply.Wait() }()
	t.Cleanup(func() {
		apply.Process.Signal(os.Interrupt)
		<-applyDone
		if t.Failed() {
			t.Logf("apply output:\n%s", applyOut.String())
		}
	})
	base := strings.TrimSuffix(startUI(t, dir, "-addr", "127.0.0.1:0"), "/")
	// Open the experiment page while its first trial runs.
	waitState(t, dir, "the first trial running", func(st *state.State) bool {
		e := st.Experiments["live"]
		return e != nil && e.Trials["t0000"] != nil && e.Trials["t0000"].Status == state.Running
	})
	b.open(base + "/e/live")
	var s string
	b.eval(`String(document.querySelectorAll('#trials .badge.s-succeeded').length) + ':' + window.__trialform.renders`, &s)
	before, renders, _ := strings.Cut(s, ":")
	// A trial finishes: the table shows it without a reload.
	b.do(chromedp.Poll[chromedp.Void](fmt.Sprintf(`document.querySelectorAll('#trials .badge.s-succeeded').length > %s`, before),
		chromedp.WithPollingTimeout(90*time.Second), chromedp.WithPollingInterval(50*time.Millisecond)))
	b.eval(`String(window.__trialform.renders)`, &s)
	if s != renders {
		t.Errorf("the page was re-routed (%s renders, was %s): the update must come live", s, renders)
	}
	b.checkCharts(map[string]int{"history-seq": 2, "importance": 1})
	b.screenshot("live-experiment")
	b.noErrors("live experiment page")

	// The logs of a running trial are followed: a line printed after the
	// page opened appears.
	waitState(t, dir, "the last trial running", func(st *state.State) bool {
		tr := st.Experiments["live"].Trials["t0002"]
		return tr != nil && tr.Status == state.Running
	})
	b.open(base + "/e/live/t/t0002")
	b.do(chromedp.Poll[chromedp.Void](`document.getElementById('logs').textContent.includes('epoch 3')`,
		chromedp.WithPollingTimeout(90*time.Second), chromedp.WithPollingInterval(50*time.Millisecond)))
	b.eval(`document.getElementById('logs').textContent`, &s)
	if !strings.HasPrefix(s, "trial starting\nepoch 0\n") {
		t.Errorf("logs: %q", s)
	}
	b.screenshot("live-trial")
	b.noErrors("live trial page")
	select {
	case err := <-applyDone:
		applyDone <- err
		if err != nil {
			t.Errorf("apply -wait: %v", err)
		}
	case <-time.After(120 * time.Second):
		t.Error("apply -wait did not finish")
	}
}

// TestBrowserTokenOnOtherAddress runs the server on 127.0.0.2 (another
// loopback address, standing in for a non-default one): it makes a token,
// and every request without it is refused.
func TestBrowserTokenOnOtherAddress(t *testing.T) {
	if testing.Short() {
		t.Skip("browser tests are not short")
	}
	dir := fixture(t, 10)
	url := startUI(t, dir, "-addr", "127.0.0.2:0")
	base, token, ok := strings.Cut(url, "/?token=")
	if !ok || len(token) < 32 || !strings.HasPrefix(base, "http://127.0.0.2:") {
		t.Fatalf("printed URL %q: want http://127.0.0.2:PORT/?token=<random>", url)
	}
	for _, p := range []string{"/", "/api/overview", "/api/events", "/assets/app.js", "/e/demo", "/api/overview?token=" + token[:len(token)-1] + "x"} {
		resp, err := http.Get(base + p)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("GET %s without the token: %d, want 401", p, resp.StatusCode)
		}
	}
	b := newBrowser(t)
	b.open(url)
	b.open(base + "/e/demo") // the cookie set by ?token= carries it
	b.checkCharts(map[string]int{"history-seq": 2})
	b.noErrors("with the token")
	// Without the cookie the page is refused.
	if _, err := chromedp.Call(b.ctx, network.ClearBrowserCookies, cdp.Empty{}); err != nil {
		t.Fatal(err)
	}
	b.doOnce(chromedp.Navigate(base + "/e/demo"))
	var s string
	b.eval(`document.body.innerText`, &s)
	if !strings.Contains(s, "token is required") {
		t.Errorf("without the token: %q", s)
	}
}

// Issue 25 item 17: the history page of a directory that is not a git
// repository says so plainly (no git "fatal:", no empty table); the
// overview names the best trial by its id; the trials table shows the
// generation by default.
func TestBrowserNoGitBestIDGenColumn(t *testing.T) {
	if testing.Short() {
		t.Skip("browser tests are not short")
	}
	dir := fixture(t, 20)
	if err := os.RemoveAll(filepath.Join(dir, ".git")); err != nil {
		t.Fatal(err)
	}
	base := strings.TrimSuffix(startUI(t, dir, "-addr", "127.0.0.1:0"), "/")
	b := newBrowser(t)

	b.open(base + "/")
	var s string
	b.eval(`document.querySelector('#overview tbody').innerText`, &s)
	if !regexp.MustCompile(`\bt00\d\d\b`).MatchString(s) || regexp.MustCompile(`#\d`).MatchString(s) {
		t.Errorf("overview: the best trial should be named by its id (t0003), not #3: %q", s)
	}

	b.open(base + "/e/demo")
	b.checkCharts(map[string]int{"history-seq": 2})
	b.eval(`String(document.querySelector('input[data-column=gen]').checked)`, &s)
	if s != "true" {
		t.Errorf("the gen column is hidden by default")
	}

	b.open(base + "/history")
	b.do(chromedp.Poll[chromedp.Void](`document.getElementById('history-error') !== null`, chromedp.WithPollingTimeout(60*time.Second)))
	b.eval(`document.getElementById('app').innerText + '|' + String(document.getElementById('history') === null)`, &s)
	if !strings.Contains(s, "is not a git repository") || strings.Contains(s, "fatal") || !strings.HasSuffix(s, "|true") {
		t.Errorf("history without git: %q", s)
	}
	b.noErrors("history without git")
}

// TestBrowserStepsSurviveNavigation: evaluations and polls that run while
// the page replaces itself (here it reloads every 50 ms) run again instead
// of failing with "Cannot find context with specified id", which failed
// TestBrowserLiveUpdate on a clean CI run.
func TestBrowserStepsSurviveNavigation(t *testing.T) {
	if testing.Short() {
		t.Skip("browser tests are not short")
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, `<!doctype html><title>x</title><script>setTimeout(() => location.reload(), 50)</script><p id="p">ok</p>`)
	}))
	defer srv.Close()
	b := newBrowser(t)
	b.doOnce(chromedp.Navigate(srv.URL))
	for i := 0; i < 100; i++ {
		var s string
		b.eval(`document.title`, &s)
		b.do(chromedp.Poll[chromedp.Void](`document.readyState !== ''`, chromedp.WithPollingTimeout(10*time.Second)))
	}
}

// The history charts' best so far is the current generation's, as the
// best trial the overview and the CLI name: a generation-1 trial measured
// with another search space or objective drew a best so far (-1000) that
// no view called the best.
func TestBrowserBestSoFarOfTheGeneration(t *testing.T) {
	if testing.Short() {
		t.Skip("browser tests are not short")
	}
	dir := fixture(t, 20)
	m := state.NewManager(filepath.Join(dir, ".trialform"))
	st, err := m.Load()
	if err != nil {
		t.Fatal(err)
	}
	e := st.Experiments["demo"]
	e.Generation = 2
	var old string
	for _, tr := range e.SortedTrials() {
		tr.Generation = 2
		if tr.Seq < 10 {
			tr.Generation = 1
			if old == "" && tr.Status == state.Succeeded {
				v := -1000.0 // demo minimizes: better than any
				tr.Value, old = &v, tr.ID
			}
		}
	}
	if old == "" || e.Best() == nil {
		t.Fatal("the fixture has no succeeded trial in each generation")
	}
	want := *e.Best().Value
	if err := m.Save(st); err != nil {
		t.Fatal(err)
	}
	base := strings.TrimSuffix(startUI(t, dir, "-addr", "127.0.0.1:0"), "/")
	b := newBrowser(t)
	b.open(base + "/e/demo")
	b.checkCharts(map[string]int{"history-seq": 2, "history-time": 2})
	var s string
	b.eval(`JSON.stringify(['history-seq', 'history-time'].map((k) => {
	  const d = window.__trialform.charts[k].getOption().series[1].data;
	  return d.length ? d[d.length - 1][1] : null;
	}))`, &s)
	if w := fmt.Sprintf("[%v,%v]", want, want); s != w {
		t.Errorf("the best so far ends at %s, want the generation's best %s (%s is generation 1's)", s, w, old)
	}
	b.noErrors("best so far")
}
