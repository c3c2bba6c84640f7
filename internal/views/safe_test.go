package views

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/trialform/trialform/internal/results"
	"github.com/trialform/trialform/plan"
	"github.com/trialform/trialform/state"
)

// hostile is text a trial controls (a metric name, a parameter value, the
// reason that quotes them): an OSC that retitles the terminal, a clear
// screen, a carriage return that forges a line, a bidirectional override.
const hostile = "m\x1b]0;pwned\x07\x1b[2J\rX\u202eY"

// trusted are the fields whose text trialform makes or validates before it
// reaches a model (experiment names are identifiers, trial ids t0000,
// statuses and actions are constants, lineage and ids are generated,
// platform keys and the objective come from validated configuration): fill
// sets them to plain text. Every other string may come from a trial or a
// platform.
var trusted = map[string]bool{"Name": true, "ID": true, "TrialID": true, "Experiment": true, "Status": true,
	"Before": true, "After": true, "Lineage": true, "Platform": true, "Goal": true, "Metric": true, "Action": true,
	"From": true, "To": true, "Pos": true, "Kind": true, "Type": true, "BestTrial": true,
	"Path": true, "Diff": true} // Path: a configuration attribute; Diff: a diff of the configuration

// fill sets every string, map and slice reachable from v to hold hostile
// text (strings, map keys and string values), so that a renderer cannot
// miss a field.
func fill(v reflect.Value, depth int) {
	if depth > 8 {
		return
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString(hostile)
	case reflect.Pointer:
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		fill(v.Elem(), depth+1)
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			if f := v.Field(i); f.CanSet() {
				if _, isTime := f.Interface().(time.Time); isTime {
					f.Set(reflect.ValueOf(time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)))
					continue
				}
				if trusted[v.Type().Field(i).Name] && f.Kind() == reflect.String {
					f.SetString("x")
					continue
				}
				fill(f, depth+1)
			}
		}
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 { // json.RawMessage, []byte
			b, _ := json.Marshal(map[string]any{hostile: hostile})
			v.SetBytes(b)
			return
		}
		s := reflect.MakeSlice(v.Type(), 1, 1)
		fill(s.Index(0), depth+1)
		v.Set(s)
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		k := reflect.New(v.Type().Key()).Elem()
		fill(k, depth+1)
		if v.Type().Elem().Kind() == reflect.Pointer && k.Kind() == reflect.String {
			k.SetString("x") // experiments and trials by name and id
		}
		e := reflect.New(v.Type().Elem()).Elem()
		if e.Kind() == reflect.Interface {
			e.Set(reflect.ValueOf(hostile))
		} else {
			fill(e, depth+1)
		}
		m.SetMapIndex(k, e)
		v.Set(m)
	case reflect.Interface:
		if v.IsNil() {
			v.Set(reflect.ValueOf(hostile))
		}
	}
}

// Every human renderer of the views, fed models whose every string holds
// escape sequences, writes them escaped: no raw ESC, BEL, CR or
// bidirectional override reaches the terminal (issue 25, item H).
func TestHumanRenderersQuoteControlCharacters(t *testing.T) {
	var p plan.Plan
	fill(reflect.ValueOf(&p).Elem(), 0)
	for _, ep := range p.Experiments {
		for _, a := range []plan.Action{plan.Create, plan.Resume, plan.Teardown} {
			ta := *ep.Trials[0]
			ta.Action = a
			ta.Recorded = true
			ep.Trials = append(ep.Trials, &ta)
		}
	}
	var st state.State
	fill(reflect.ValueOf(&st).Elem(), 0)
	var e *state.Experiment
	for _, x := range st.Experiments {
		e = x
	}
	for _, t := range e.Trials {
		t.Status = state.Succeeded // so that BestLines names it
	}
	now := time.Date(2026, 1, 1, 13, 0, 0, 0, time.UTC)
	rows := results.FromExperiment(e, now)
	renders := map[string]func(w *bytes.Buffer){
		"Plan":        func(w *bytes.Buffer) { Plan(w, &p, Colors{}) },
		"SummaryLine": func(w *bytes.Buffer) { w.WriteString(SummaryLine(&p)) },
		"StatusLine":  func(w *bytes.Buffer) { w.WriteString(StatusLine(p.Experiments[0])) },
		"ShowState":   func(w *bytes.Buffer) { ShowState(w, &st, Colors{}, map[string]time.Time{hostile: now}, now) },
		"Trials":      func(w *bytes.Buffer) { Trials(w, e, now) },
		"HeldChanges": func(w *bytes.Buffer) { HeldChanges(w, &st, Colors{}, now, true) },
		"Approved":    func(w *bytes.Buffer) { Approved(w, hostile, e.Hold, e.Approval, true) },
		"StateList":   func(w *bytes.Buffer) { StateList(w, &st) },
		"BestLines": func(w *bytes.Buffer) {
			w.WriteString(strings.Join(BestLines([]*state.Experiment{e}), "\n"))
		},
		"BudgetLines": func(w *bytes.Buffer) {
			w.WriteString(strings.Join(BudgetLines([]*state.Experiment{e}), "\n"))
		},
		"ResultsTableText": func(w *bytes.Buffer) {
			ResultsTableText(w, ResultsTable{Rows: rows, Columns: DefaultColumns(rows, true)})
		},
		"FormatParams": func(w *bytes.Buffer) { w.WriteString(FormatParams(map[string]any{hostile: hostile})) },
	}
	for name, render := range renders {
		var b bytes.Buffer
		render(&b)
		if b.Len() == 0 {
			t.Errorf("%s wrote nothing", name)
		}
		for _, bad := range []string{"\x1b", "\x07", "\r", "\u202e"} {
			if strings.Contains(b.String(), bad) {
				t.Errorf("%s writes %q raw:\n%q", name, bad, b.String())
			}
		}
	}
}

func TestSafe(t *testing.T) {
	for in, want := range map[string]string{
		"loss":              "loss",
		"accuracy µ":        "accuracy µ",
		"a\x1b[2Jb":         `"a\x1b[2Jb"`,
		"x\ny":              `"x\ny"`,
		"bidi\u202e":        `"bidi\u202e"`,
		"bad\xffutf8":       `"bad\xffutf8"`,
		"":                  "",
		"tab\there":         `"tab\there"`,
		`quote " unchanged`: `quote " unchanged`,
	} {
		if got := Safe(in); got != want {
			t.Errorf("Safe(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestSafeLines(t *testing.T) {
	for in, want := range map[string]string{
		"a\nb":                         "a\nb",
		"machine m: stop:\n\x1b]0;x\a": "machine m: stop:\n\"\\x1b]0;x\\a\"",
		"one\r line":                   `"one\r line"`,
	} {
		if got := SafeLines(in); got != want {
			t.Errorf("SafeLines(%q) = %q, want %q", in, got, want)
		}
	}
}
