package ui_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/trialform/trialform/internal/ui"
	"github.com/trialform/trialform/providers/platforms"
	"github.com/trialform/trialform/schema"
	"github.com/trialform/trialform/state"
	"github.com/trialform/trialform/tuner"
)

func newServer(t *testing.T, dir, token string) *httptest.Server {
	t.Helper()
	s := ui.New(ui.Options{
		StateDir: filepath.Join(dir, ".trialform"), WorkDir: dir, Token: token,
		Config: func() *schema.Config {
			cfg, diags := schema.Load(dir, schema.LoadOptions{Platforms: platforms.Registry(), Tuners: tuner.Builtin()})
			if diags.HasErrors() {
				t.Errorf("fixture config: %v", diags)
				return nil
			}
			return cfg
		},
	})
	ts := httptest.NewServer(s)
	t.Cleanup(func() { ts.Close(); s.Close() })
	return ts
}

func get(t *testing.T, c *http.Client, url string, hdr ...string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		if hdr[i] == "Host" {
			req.Host = hdr[i+1]
		}
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestPathTraversalIs404(t *testing.T) {
	ts := newServer(t, fixture(t, 20), "")
	for _, p := range []string{
		"/api/experiments/demo/trials/..%2F..%2Fetc/logs",
		"/api/experiments/demo/trials/..%2F..%2F..%2F..%2Fetc%2Fpasswd/scalars",
		"/api/experiments/..%2F..%2Fetc/trials",
		"/api/experiments/demo/trials/../../../etc/passwd",
		"/api/experiments/demo/trials/t9999",
		"/api/experiments/nope",
		"/assets/../../../../etc/passwd",
		"/assets/..%2f..%2f..%2fetc%2fpasswd",
		"/assets/",
		"/etc/passwd",
	} {
		code, body := get(t, ts.Client(), ts.URL+p)
		if code != http.StatusNotFound {
			t.Errorf("%s: %d %q, want 404", p, code, body)
		}
		if strings.Contains(body, "root:") {
			t.Errorf("%s leaked a file: %q", p, body)
		}
	}
	if code, _ := get(t, ts.Client(), ts.URL+"/api/experiments/demo/trials/t0003/scalars"); code != 200 {
		t.Fatalf("a real trial: %d", code)
	}
}

func TestReadOnly(t *testing.T) {
	ts := newServer(t, fixture(t, 10), "")
	for _, m := range []string{"POST", "PUT", "DELETE", "PATCH"} {
		for _, p := range []string{"/", "/api/overview", "/api/experiments/demo/trials/t0001"} {
			req, _ := http.NewRequest(m, ts.URL+p, strings.NewReader("{}"))
			resp, err := ts.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusMethodNotAllowed {
				t.Errorf("%s %s: %d, want 405", m, p, resp.StatusCode)
			}
		}
	}
}

func TestTokenChecked(t *testing.T) {
	ts := newServer(t, fixture(t, 10), "s3cret")
	c := ts.Client()
	for _, p := range []string{"/", "/api/overview", "/api/events", "/assets/app.js", "/api/overview?token=wrong"} {
		if code, _ := get(t, c, ts.URL+p); code != http.StatusUnauthorized {
			t.Errorf("%s without the token: %d, want 401", p, code)
		}
	}
	if code, _ := get(t, c, ts.URL+"/api/overview", "Authorization", "Bearer s3cret"); code != 200 {
		t.Errorf("bearer: %d", code)
	}
	if code, _ := get(t, c, ts.URL+"/api/overview", "Cookie", "trialform_token=s3cret"); code != 200 {
		t.Errorf("cookie: %d", code)
	}
	resp, err := c.Get(ts.URL + "/?token=s3cret")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(resp.Header.Get("Set-Cookie"), "HttpOnly") {
		t.Errorf("?token=: %d, Set-Cookie %q", resp.StatusCode, resp.Header.Get("Set-Cookie"))
	}
}

// Without a token only loopback Host names are served (DNS rebinding).
func TestForeignHostRefusedWithoutToken(t *testing.T) {
	ts := newServer(t, fixture(t, 10), "")
	if code, _ := get(t, ts.Client(), ts.URL+"/api/overview", "Host", "evil.example:8080"); code != http.StatusForbidden {
		t.Fatalf("foreign Host: %d, want 403", code)
	}
	if code, _ := get(t, ts.Client(), ts.URL+"/api/overview", "Host", "localhost:8080"); code != 200 {
		t.Fatalf("localhost: %d", code)
	}
}

// A page of another site (another port of localhost is same-site, not
// same-origin) cannot make the browser call the API: it read nothing, but
// started platform refreshes and log reads. Following a link to the
// dashboard, and its own requests, still work.
func TestCrossSiteRequestRefused(t *testing.T) {
	ts := newServer(t, fixture(t, 10), "")
	for _, c := range []struct {
		site, mode string
		want       int
	}{
		{"cross-site", "no-cors", http.StatusForbidden},
		{"same-site", "cors", http.StatusForbidden},
		{"cross-site", "navigate", 200},
		{"same-origin", "cors", 200},
		{"none", "navigate", 200},
		{"", "", 200},
	} {
		var hdr []string
		if c.site != "" {
			hdr = []string{"Sec-Fetch-Site", c.site, "Sec-Fetch-Mode", c.mode}
		}
		if code, _ := get(t, ts.Client(), ts.URL+"/api/plan", hdr...); code != c.want {
			t.Errorf("Sec-Fetch-Site %q, mode %q: %d, want %d", c.site, c.mode, code, c.want)
		}
	}
}

func TestSecurityHeadersAndEscapedJSON(t *testing.T) {
	ts := newServer(t, fixture(t, 10), "")
	resp, err := ts.Client().Get(ts.URL + "/api/experiments/demo/trials/t0002")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") {
		t.Errorf("CSP %q", csp)
	}
	if strings.Contains(string(b), "<img") {
		t.Errorf("raw HTML in JSON: %s", b)
	}
	var tr struct{ Params map[string]any }
	if err := json.Unmarshal(b, &tr); err != nil || tr.Params["opt"] != xss {
		t.Fatalf("params %v (%v)", tr.Params, err)
	}
}

func TestTrialsQueryAndCaret(t *testing.T) {
	ts := newServer(t, fixture(t, 60), "")
	var ok struct {
		Total int
		Rows  []struct {
			ID     string
			Status string
			Value  *float64
		}
	}
	code, body := get(t, ts.Client(), ts.URL+"/api/experiments/demo/trials?q=status:succeeded&sort=-metric")
	if code != 200 || json.Unmarshal([]byte(body), &ok) != nil {
		t.Fatalf("%d %s", code, body)
	}
	if ok.Total != 60 || len(ok.Rows) == 0 || len(ok.Rows) >= 60 {
		t.Fatalf("total %d, rows %d", ok.Total, len(ok.Rows))
	}
	for i, r := range ok.Rows {
		if r.Status != "SUCCEEDED" || (i > 0 && *r.Value > *ok.Rows[i-1].Value) {
			t.Fatalf("row %d: %+v (want succeeded, by metric descending)", i, r)
		}
	}
	code, body = get(t, ts.Client(), ts.URL+"/api/experiments/demo/trials?q=status:succeeded,parms.lr:%3C1")
	var qe ui.QueryError
	if code != 400 || json.Unmarshal([]byte(body), &qe) != nil || qe.Param != "q" || qe.Col != len("status:succeeded,") || !strings.Contains(qe.Msg, "params.") {
		t.Fatalf("%d %s (%+v): want the column of parms.lr and a did-you-mean", code, body, qe)
	}
}

func TestScalarsFromEventFiles(t *testing.T) {
	ts := newServer(t, fixture(t, 10), "")
	_, body := get(t, ts.Client(), ts.URL+"/api/experiments/demo/trials/t0003/scalars")
	var sc ui.ScalarsJSON
	if err := json.Unmarshal([]byte(body), &sc); err != nil {
		t.Fatal(err)
	}
	if len(sc.Files) != 3 || len(sc.Tags["loss"]) != 20 || len(sc.Tags["eval/accuracy"]) != 20 || len(sc.Tags["lr"]) != 20 || sc.Tags["loss"][19].Step != 19 {
		t.Fatalf("scalars: files %v, tags %d", sc.Files, len(sc.Tags))
	}
}

// A log longer than the tail is cut to its last 256 KiB (at a line start),
// with a "cut" event first, and the stream ends with "end".
func TestLogsTail(t *testing.T) {
	dir := fixture(t, 5)
	var total int
	s := ui.New(ui.Options{
		StateDir: filepath.Join(dir, ".trialform"), WorkDir: dir,
		Logs: func(ctx context.Context, e *state.Experiment, tr *state.Trial, follow bool, w io.Writer) error {
			// The output that exists arrives in one write (a tick of the
			// stream between writes would send each part whole).
			var b strings.Builder
			for i := 0; i < 40000; i++ {
				fmt.Fprintf(&b, "line %06d of trial %s\n", i, tr.ID)
			}
			total = b.Len()
			_, err := io.WriteString(w, b.String())
			return err
		},
	})
	ts := httptest.NewServer(s)
	defer func() { ts.Close(); s.Close() }()
	code, body := get(t, ts.Client(), ts.URL+"/api/experiments/demo/trials/t0001/logs")
	if code != 200 {
		t.Fatalf("%d %s", code, body)
	}
	var text strings.Builder
	events := []string{}
	for _, ev := range strings.Split(body, "\n\n") {
		name, data, ok := strings.Cut(ev, "\ndata: ")
		if !ok {
			continue
		}
		name = strings.TrimPrefix(name, "event: ")
		events = append(events, name)
		if name == "log" {
			var s string
			if err := json.Unmarshal([]byte(data), &s); err != nil {
				t.Fatal(err)
			}
			text.WriteString(s)
		}
	}
	got := text.String()
	if events[0] != "cut" || events[len(events)-1] != "end" {
		t.Fatalf("events %v", events)
	}
	if len(got) > 256<<10 || len(got) < 200<<10 || !strings.HasPrefix(got, "line ") || !strings.HasSuffix(got, "line 039999 of trial t0001\n") {
		t.Fatalf("tail of %d bytes: %d bytes, starts %q", total, len(got), got[:min(40, len(got))])
	}
}

// A trial directory replaced by a symbolic link, or an event file that is
// one, is not followed.
func TestScalarsFollowNoLink(t *testing.T) {
	dir := fixture(t, 10)
	outside := t.TempDir()
	src := filepath.Join(dir, ".trialform", "trials", "demo", "t0003", "output", "events.out.tfevents.1.host")
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(outside, "events.out.tfevents.9.host"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	tb := filepath.Join(dir, ".trialform", "tensorboard", "demo", "t0003")
	if err := os.RemoveAll(tb); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, tb); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "events.out.tfevents.9.host"), filepath.Join(filepath.Dir(src), "events.out.tfevents.link")); err != nil {
		t.Fatal(err)
	}
	ts := newServer(t, dir, "")
	_, body := get(t, ts.Client(), ts.URL+"/api/experiments/demo/trials/t0003/scalars")
	var sc ui.ScalarsJSON
	if err := json.Unmarshal([]byte(body), &sc); err != nil {
		t.Fatal(err)
	}
	if len(sc.Files) != 2 || sc.Tags["lr"] != nil {
		t.Fatalf("files %v, tags %v: links were followed", sc.Files, len(sc.Tags))
	}
}

// The table's rows are the `trials -q -sort` command's rows, in the same
// order: one language, one implementation.
func TestTableAgreesWithTrialsCommand(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the CLI")
	}
	dir := fixture(t, 60)
	q, sortBy := "status:succeeded|early_stopped, params.x:>-3", "-params.layers,metric"
	cmd := exec.Command(trialformBin(t), "-chdir", dir, "trials", "demo", "-q", q, "-sort", sortBy, "-o", "json")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("trials: %v", err)
	}
	var cli []struct{ ID string }
	if err := json.Unmarshal(out, &cli); err != nil {
		t.Fatalf("trials -o json: %v\n%s", err, out)
	}
	ts := newServer(t, dir, "")
	code, body := get(t, ts.Client(), ts.URL+"/api/experiments/demo/trials?q="+url.QueryEscape(q)+"&sort="+url.QueryEscape(sortBy))
	var api struct{ Rows []struct{ ID string } }
	if code != 200 || json.Unmarshal([]byte(body), &api) != nil {
		t.Fatalf("%d %s", code, body)
	}
	if len(cli) < 5 || len(cli) != len(api.Rows) {
		t.Fatalf("cli %d rows, api %d", len(cli), len(api.Rows))
	}
	for i := range cli {
		if cli[i].ID != api.Rows[i].ID {
			t.Fatalf("row %d: cli %s, api %s", i, cli[i].ID, api.Rows[i].ID)
		}
	}
}

// Issue 25, item 1: the budget counts the trials of the current generation.
// After a new generation the overview said "budget 16/8" (every
// generation's trials against max_trials).
func TestBudgetIsPerGeneration(t *testing.T) {
	dir := fixture(t, 30)
	m := state.NewManager(filepath.Join(dir, ".trialform"))
	st, err := m.Load()
	if err != nil {
		t.Fatal(err)
	}
	// "other": 20 trials, t0000-t0011 of generation 1, t0012-t0019 of
	// generation 2, whose budget is 8.
	e := st.Experiments["other"]
	e.Generation, e.MaxTrials = 2, 8
	for _, tr := range e.Trials {
		if tr.Seq >= 12 {
			tr.Generation = 2
		}
	}
	if err := m.Save(st); err != nil {
		t.Fatal(err)
	}
	ts := newServer(t, dir, "")
	code, body := get(t, ts.Client(), ts.URL+"/api/overview")
	if code != 200 {
		t.Fatalf("overview: %d %s", code, body)
	}
	var ov struct {
		Experiments []struct {
			Name             string `json:"name"`
			Trials           int    `json:"trials"`
			BudgetUsed       int    `json:"budget_used"`
			GenerationTrials int    `json:"generation_trials"`
			Budget           string `json:"budget"`
		} `json:"experiments"`
	}
	if err := json.Unmarshal([]byte(body), &ov); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, x := range ov.Experiments {
		if x.Name != "other" {
			continue
		}
		found = true
		// Generation 2 holds t0012-t0019: t0018 and t0019 still run.
		if x.Trials != 20 || x.GenerationTrials != 8 || x.BudgetUsed != 8 || x.Budget != "generation 2: 6/8 trials done; 20 in all" {
			t.Errorf("other: trials %d, generation %d, budget used %d, %q; want 20, 8, 8, \"generation 2: 6/8 trials done; 20 in all\"", x.Trials, x.GenerationTrials, x.BudgetUsed, x.Budget)
		}
	}
	if !found {
		t.Fatalf("no experiment other in %s", body)
	}
}

// Distinct queries do not grow the dashboard without bound: the answers
// kept are bounded in bytes (issue 25 G: 70 queries over 5,000 trials grew
// it from 60 to 232 MB).
func TestAnswerCacheBounded(t *testing.T) {
	ts := newServer(t, fixture(t, 3000), "")
	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	code, body := get(t, ts.Client(), ts.URL+"/api/experiments/demo/trials?q=params.x:%3C5")
	if code != 200 {
		t.Fatalf("%d %s", code, body)
	}
	answer := len(body)
	// What the server prepares by itself after a state change (the
	// unfiltered rows, importance, curves) is ready before measuring.
	for _, p := range []string{"trials", "importance", "curves"} {
		if code, body := get(t, ts.Client(), ts.URL+"/api/experiments/demo/"+p); code != 200 {
			t.Fatalf("%s: %d %s", p, code, body)
		}
	}
	before := heap()
	for i := range 70 {
		code, body := get(t, ts.Client(), ts.URL+fmt.Sprintf("/api/experiments/demo/trials?q=params.x:%%3C%d", 6+i))
		if code != 200 || len(body) != answer {
			t.Fatalf("query %d: %d, %d bytes (want %d)", i, code, len(body), answer)
		}
	}
	grown := int64(heap()) - int64(before)
	t.Logf("70 distinct queries of %d bytes each: heap grew %.1f MB", answer, float64(grown)/1e6)
	if limit := int64(24<<20) + 20*int64(answer); grown > limit {
		t.Errorf("heap grew %.1f MB after 70 distinct queries, want at most %.1f MB", float64(grown)/1e6, float64(limit)/1e6)
	}
}

// A trial named many times in curves?trials= comes back once (issue 25 G:
// a 640 KB list of repeated ids returned 26 MB).
func TestCurvesRepeatedIDsOnce(t *testing.T) {
	ts := newServer(t, fixture(t, 40), "")
	ids := strings.TrimSuffix(strings.Repeat("t0001,t0003,t0001,", 2000), ",")
	code, body := get(t, ts.Client(), ts.URL+"/api/experiments/demo/curves?trials="+ids)
	var d struct {
		Curves []struct{ ID string }
	}
	if code != 200 || json.Unmarshal([]byte(body), &d) != nil {
		t.Fatalf("%d %.300s", code, body)
	}
	var got []string
	for _, c := range d.Curves {
		got = append(got, c.ID)
	}
	if strings.Join(got, ",") != "t0001,t0003" {
		t.Errorf("curves of %v, want t0001 and t0003 once each (%d bytes)", got, len(body))
	}
}

// The overview names the backend and every lock held on it, with its
// holder (issue 26: the dashboard names the backend and the lock holder).
func TestOverviewNamesBackendAndLocks(t *testing.T) {
	dir := fixture(t, 3)
	ts := newServer(t, dir, "")
	overview := func() (b struct {
		Kind     string `json:"kind"`
		Location string `json:"location"`
		Locks    []struct {
			Operation string `json:"operation"`
			PID       int    `json:"pid"`
			Who       string `json:"who"`
		} `json:"locks"`
	}) {
		code, body := get(t, ts.Client(), ts.URL+"/api/overview")
		if code != http.StatusOK {
			t.Fatalf("overview: %d %s", code, body)
		}
		var out struct {
			Backend json.RawMessage `json:"backend"`
		}
		if err := json.Unmarshal([]byte(body), &out); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(out.Backend, &b); err != nil {
			t.Fatalf("backend %s: %v", out.Backend, err)
		}
		return b
	}
	b := overview()
	sd := filepath.Join(dir, ".trialform")
	if b.Kind != state.LocalBackend || b.Location != sd || len(b.Locks) != 0 {
		t.Fatalf("backend = %+v, want local at %s, no lock", b, sd)
	}
	lk, err := state.Open(sd).Lock(context.Background(), "apply", "test", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer lk.Unlock()
	b = overview()
	if len(b.Locks) != 1 || b.Locks[0].Operation != "apply" || b.Locks[0].PID != os.Getpid() || b.Locks[0].Who == "" {
		t.Fatalf("locks = %+v, want this process's apply lock", b.Locks)
	}
}

// A resumed trial reports its steps from 0 again (docs/results.md): the
// trial's and the experiment's curves say which attempt reported each
// point, as `metrics` does in its ATTEMPT column, so the charts draw each
// attempt apart. Without it a trial lost at step 9 and resumed drew a line
// from step 9 back to step 0, and its page listed step 0 twice.
func TestPointsCarryTheirAttempt(t *testing.T) {
	dir := fixture(t, 10)
	m := state.NewManager(filepath.Join(dir, ".trialform"))
	st, err := m.Load()
	if err != nil {
		t.Fatal(err)
	}
	tr := st.Experiments["demo"].Trials["t0004"]
	var pts []state.MetricPoint
	for k := 0; k < 3; k++ {
		pts = append(pts, state.MetricPoint{Type: "PERIODICAL", Sequence: k, Attempt: 2, Value: json.RawMessage("0.5"), Time: tr.StartedAt.Add(time.Minute)})
	}
	if err := m.AppendMetrics("demo", "t0004", pts); err != nil {
		t.Fatal(err)
	}
	tr.Attempts, tr.Intermediate = 2, tr.Intermediate+3
	if err := m.Save(st); err != nil {
		t.Fatal(err)
	}
	ts := newServer(t, dir, "")
	code, body := get(t, ts.Client(), ts.URL+"/api/experiments/demo/trials/t0004")
	var tj struct {
		Points []struct{ Seq, Attempt int }
	}
	if code != 200 || json.Unmarshal([]byte(body), &tj) != nil || len(tj.Points) != 13 {
		t.Fatalf("%d %.300s", code, body)
	}
	if p := tj.Points[12]; p.Seq != 2 || p.Attempt != 2 {
		t.Errorf("trial's last point %+v, want step 2 of attempt 2", p)
	}
	code, body = get(t, ts.Client(), ts.URL+"/api/experiments/demo/curves?trials=t0004,t0005")
	var cj struct {
		Curves []struct {
			ID     string
			Points [][]float64
		}
	}
	if code != 200 || json.Unmarshal([]byte(body), &cj) != nil || len(cj.Curves) != 2 {
		t.Fatalf("%d %.300s", code, body)
	}
	if c := cj.Curves[0]; len(c.Points) != 13 || fmt.Sprint(c.Points[12]) != "[2 0.5 2]" {
		t.Errorf("curve of %s: %v, want its last point [step 2, 0.5, attempt 2]", c.ID, c.Points)
	}
	// One attempt: [step, value] as before.
	if c := cj.Curves[1]; len(c.Points) == 0 || len(c.Points[0]) != 2 {
		t.Errorf("curve of %s: %v, want [step, value] points", c.ID, c.Points)
	}
}
