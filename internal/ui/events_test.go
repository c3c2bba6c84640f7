package ui_test

import (
	"bufio"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/trialform/trialform/internal/ui"
	"github.com/trialform/trialform/state"
)

// sseReader reads server-sent events: next returns the next event's name
// and data.
type sseReader struct {
	t  *testing.T
	br *bufio.Reader
}

func (r *sseReader) next() (string, string) {
	r.t.Helper()
	name, data := "", ""
	for {
		l, err := r.br.ReadString('\n')
		if err != nil {
			r.t.Fatalf("the event stream ended: %v", err)
		}
		l = strings.TrimRight(l, "\n")
		switch {
		case strings.HasPrefix(l, "event: "):
			name = strings.TrimPrefix(l, "event: ")
		case strings.HasPrefix(l, "data: "):
			data = strings.TrimPrefix(l, "data: ")
		case l == "" && name != "":
			return name, data
		}
	}
}

// A "state" event carries the rows of the trials that changed since the
// stream's previous event (the same rows the trials table answers, so
// nothing the table would not show), the version it follows from, and
// the old best's row when the best moved.
func TestEventsCarryChangedTrials(t *testing.T) {
	dir := fixture(t, 60)
	ts := newServer(t, dir, "")
	resp, err := ts.Client().Get(ts.URL + "/api/events")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	r := &sseReader{t: t, br: bufio.NewReader(resp.Body)}
	name, data := r.next()
	var hello struct{ Version, Serial uint64 }
	if err := json.Unmarshal([]byte(data), &hello); name != "hello" || err != nil || hello.Version == 0 {
		t.Fatalf("first event %s %q (%v)", name, data, err)
	}
	var oldBest string
	changeState(t, dir, func(e *state.Experiment) {
		oldBest = e.Best().ID
		setValue(e, "t0005", -0.5)
		addTrial(e, "live1")
	})
	name, data = r.next()
	var ev ui.EventJSON
	if err := json.Unmarshal([]byte(data), &ev); name != "state" || err != nil {
		t.Fatalf("after a save: %s %q (%v)", name, data, err)
	}
	if ev.From != hello.Version || ev.Version <= ev.From || ev.Full {
		t.Fatalf("event from %d to %d (full %v), the stream said hello at %d", ev.From, ev.Version, ev.Full, hello.Version)
	}
	x := ev.Experiments["demo"]
	if x == nil || len(ev.Experiments) != 1 || x.Total != 61 {
		t.Fatalf("event experiments: %s", data)
	}
	var ids []string
	for _, row := range x.Rows {
		ids = append(ids, row.ID)
	}
	want := []string{oldBest, "t0005", "live1"} // the old best, the changed trial, the new one
	if oldBest > "t0005" {
		want[0], want[1] = want[1], want[0]
	}
	if got := strings.Join(ids, ","); got != strings.Join(want, ",") {
		t.Errorf("event rows %s, want %s (in sequence order: the old best, the changed trial, the new one)", got, strings.Join(want, ","))
	}
	// Each row is the row of the trials table.
	code, body := get(t, ts.Client(), ts.URL+"/api/experiments/demo/trials")
	if code != http.StatusOK {
		t.Fatalf("trials: %d", code)
	}
	var table struct {
		Rows    []json.RawMessage `json:"rows"`
		Version uint64            `json:"version"`
	}
	if err := json.Unmarshal([]byte(body), &table); err != nil {
		t.Fatal(err)
	}
	if table.Version != ev.Version {
		t.Errorf("the table's version %d, the event's %d", table.Version, ev.Version)
	}
	byID := map[string]string{}
	for _, raw := range table.Rows {
		var row ui.RowJSON
		json.Unmarshal(raw, &row)
		b, _ := json.Marshal(row)
		byID[row.ID] = string(b)
	}
	for _, row := range x.Rows {
		b, _ := json.Marshal(row)
		if byID[row.ID] != string(b) {
			t.Errorf("event row %s differs from the table's:\n%s\n%s", row.ID, b, byID[row.ID])
		}
	}

	// A removed trial is named.
	changeState(t, dir, func(e *state.Experiment) { delete(e.Trials, "t0010") })
	_, data = r.next()
	ev = ui.EventJSON{}
	if err := json.Unmarshal([]byte(data), &ev); err != nil {
		t.Fatal(err)
	}
	if x := ev.Experiments["demo"]; x == nil || strings.Join(x.Removed, ",") != "t0010" || x.Total != 60 {
		t.Errorf("after removing t0010: %s", data)
	}
}
