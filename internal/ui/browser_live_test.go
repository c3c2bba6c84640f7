package ui_test

import (
	"fmt"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/trialform/trialform/state"
)

// trialsFetchesJS counts the page's requests for an experiment's whole
// trials list (/api/experiments/NAME/trials, without a query).
func trialsFetchesJS(exp string) string {
	return fmt.Sprintf(`String(performance.getEntriesByType('resource').filter((e) => new URL(e.name).pathname === '/api/experiments/%s/trials' && new URL(e.name).search === '').length)`, exp)
}

// changeState loads the state of dir, lets f change it and saves it, as
// apply would.
func changeState(t *testing.T, dir string, f func(e *state.Experiment)) {
	t.Helper()
	m := state.NewManager(filepath.Join(dir, ".trialform"))
	st, err := m.Load()
	if err != nil {
		t.Fatal(err)
	}
	f(st.Experiments["demo"])
	if err := m.Save(st); err != nil {
		t.Fatal(err)
	}
}

// addTrial adds a copy of t0000 as trial id with the next sequence number.
func addTrial(e *state.Experiment, id string) {
	tr := *e.Trials["t0000"]
	tr.ID, tr.Seq = id, e.NextSeq
	e.NextSeq++
	e.Trials[id] = &tr
}

func setValue(e *state.Experiment, id string, v float64) {
	tr := *e.Trials[id]
	tr.Value = &v
	e.Trials[id] = &tr
}

// A live update patches the open experiment page: the changed and the new
// trials arrive in the event, the table shows them (the best mark moves
// with them) and the page does not fetch the trials list again. A page
// that missed an event, and one whose server restarted, fetch it once and
// show the state as it is. A filtered table fetches its filtered rows.
func TestBrowserLiveUpdatePatchesWithoutRefetch(t *testing.T) {
	if testing.Short() {
		t.Skip("browser tests are not short")
	}
	dir := fixture(t, 60)
	base, stop := startUIStoppable(t, dir, "-addr", "127.0.0.1:0")
	base = strings.TrimSuffix(base, "/")
	b := newBrowser(t)
	b.open(base + "/e/demo")
	var s string
	b.eval(`String(performance.setResourceTimingBufferSize(100000))`, &s)
	rowShows := func(id, text string) string {
		return fmt.Sprintf(`(() => { const r = document.querySelector('#trials .vt-row[data-id=%q]'); return !!r && r.textContent.includes(%q); })()`, id, text)
	}
	waitFor := func(js string) {
		t.Helper()
		b.do(chromedp.Poll[chromedp.Void](js, chromedp.WithPollingTimeout(90*time.Second), chromedp.WithPollingInterval(20*time.Millisecond)))
	}
	fetches := func() int {
		t.Helper()
		b.eval(trialsFetchesJS("demo"), &s)
		n, err := strconv.Atoi(s)
		if err != nil {
			t.Fatalf("fetch count %q", s)
		}
		return n
	}
	// Wait for the first event stream to have said hello, so a change is
	// an event and not part of the first load.
	waitFor(`document.getElementById('live').textContent.startsWith('live')`)
	before := fetches()
	if before < 1 {
		t.Fatalf("the page fetched the trials %d times (want the first load counted)", before)
	}

	// A trial becomes the best (minimize) and a trial is added.
	changeState(t, dir, func(e *state.Experiment) {
		setValue(e, "t0005", -0.5)
		addTrial(e, "live1")
	})
	waitFor(`document.getElementById('row-count').textContent === '61 of 61 trials'`)
	waitFor(rowShows("t0005", "-0.5"))
	b.eval(`Array.from(document.querySelectorAll('#trials .vt-row.best')).map((r) => r.dataset.id).join(',')`, &s)
	if s != "t0005" {
		t.Errorf("rows marked best: %q, want t0005", s)
	}
	if n := fetches(); n != before {
		t.Errorf("the page fetched the whole trials list %d more times on a live update: it must patch the table from the event", n-before)
	}
	b.eval(`String(window.__trialform.patched || 0)`, &s)
	if s == "0" {
		t.Error("no event was patched into the page")
	}
	// The header follows too.
	waitFor(`document.querySelector('.summary').textContent.includes('(t0005)')`)

	// The page misses an event: the next one does not follow from the
	// version it shows, and it fetches the list once.
	b.eval(`String(window.__trialform.drop = 1)`, &s)
	changeState(t, dir, func(e *state.Experiment) { setValue(e, "t0006", 4.25) })
	waitFor(`window.__trialform.dropped === 1`)
	changeState(t, dir, func(e *state.Experiment) { addTrial(e, "live2") })
	waitFor(`document.getElementById('row-count').textContent === '62 of 62 trials'`)
	waitFor(rowShows("t0006", "4.25"))
	after := fetches()
	if after == before {
		t.Error("a page that missed an event did not fetch the trials list again")
	}

	b.noErrors("live experiment page")

	// The server restarts (its versions start again) while the state
	// changes: the page reconnects, fetches once, and patches after.
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	stop()
	waitFor(`document.getElementById('live').textContent === 'reconnecting…'`)
	changeState(t, dir, func(e *state.Experiment) { addTrial(e, "live3") })
	startUI(t, dir, "-addr", u.Host)
	waitFor(`document.getElementById('row-count').textContent === '63 of 63 trials'`)
	waitFor(`document.getElementById('live').textContent.startsWith('live')`)
	reconnected := fetches()
	if reconnected == after {
		t.Error("a reconnected page did not fetch the trials list again")
	}
	changeState(t, dir, func(e *state.Experiment) { setValue(e, "t0007", 3.5) })
	waitFor(rowShows("t0007", "3.5"))
	if n := fetches(); n != reconnected {
		t.Errorf("after the reconnection a live update fetched the trials list %d more times", n-reconnected)
	}
	// A filtered table asks the server for its rows again (the query is
	// the server's), not for the whole list.
	b.doOnce(chromedp.SendKeys(chromedp.ID("q"), "status:running"))
	waitFor(`document.getElementById('row-count').textContent === '2 of 63 trials'`)
	changeState(t, dir, func(e *state.Experiment) {
		tr := *e.Trials["t0001"]
		tr.Status, tr.EndedAt = state.Running, nil
		e.Trials["t0001"] = &tr
	})
	waitFor(`document.getElementById('row-count').textContent === '3 of 63 trials'`)
	waitFor(rowShows("t0001", "RUNNING"))
	if n := fetches(); n != reconnected {
		t.Errorf("a live update of a filtered table fetched the whole trials list %d more times", n-reconnected)
	}

	// The only errors: the refused connections while the server was
	// down.
	for _, e := range b.consoleErrors() {
		if !strings.Contains(e, "ERR_CONNECTION_REFUSED") {
			t.Errorf("console error after the restart: %s", e)
		}
	}
}
