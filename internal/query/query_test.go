package query

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/trialform/trialform/internal/docs"
	"time"

	"github.com/trialform/trialform/internal/results"
	"github.com/trialform/trialform/state"
)

func fp(f float64) *float64 { return &f }

func ts(s string) *time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return &t
}

func dur(d time.Duration) *time.Duration { return &d }

// rows is a small experiment like seed 004's: activation and lr params,
// loss and accuracy metrics.
func rows() []*results.Row {
	mk := func(seq int, status, act string, lr float64, loss *float64, started, ended string) *results.Row {
		r := &results.Row{Experiment: "mnist", ID: TrialIDForTest(seq), Seq: seq, Generation: 1, Status: status,
			Params: map[string]any{"activation": act, "lr": lr}, Metrics: map[string]float64{},
			Objective: "loss", Goal: "minimize", Attempts: 1}
		if loss != nil {
			r.Metrics["loss"] = *loss
			r.Metrics["accuracy"] = 1 - *loss
			r.Metric = loss
		}
		if started != "" {
			r.StartedAt = ts(started)
		}
		if ended != "" {
			r.EndedAt = ts(ended)
			d := r.EndedAt.Sub(*r.StartedAt)
			r.Duration = &d
		}
		return r
	}
	return []*results.Row{
		mk(1, "SUCCEEDED", "relu", 0.1, fp(0.25), "2024-05-01T10:00:00Z", "2024-05-01T10:01:00Z"),
		mk(2, "SUCCEEDED", "sigmoid", 0.01, fp(0.3), "2024-05-01T10:00:00Z", "2024-05-01T10:10:00Z"),
		mk(3, "SUCCEEDED", "tanh", 0.1, fp(0.1), "2024-05-02T09:00:00Z", "2024-05-02T09:00:30Z"),
		mk(4, "FAILED", "relu", 0.5, nil, "2024-05-02T12:00:00Z", "2024-05-02T12:00:01Z"),
		mk(5, "SUCCEEDED", "relu", 0.001, fp(0.9), "2024-05-03T00:00:00Z", "2024-05-03T02:00:00Z"),
		mk(6, "RUNNING", "sigmoid", 0.2, nil, "2024-05-03T00:00:00Z", ""),
		mk(10, "WAITING", "relu", 0.3, nil, "", ""),
	}
}

func TrialIDForTest(seq int) string { return "t" + strings.Repeat("0", 4-len(itoa(seq))) + itoa(seq) }

func itoa(n int) string {
	s := ""
	for {
		s = string(rune('0'+n%10)) + s
		n /= 10
		if n == 0 {
			return s
		}
	}
}

func ids(rs []*results.Row) string {
	var out []string
	for _, r := range rs {
		out = append(out, r.ID)
	}
	return strings.Join(out, " ")
}

func TestMatch(t *testing.T) {
	for _, tc := range []struct{ q, want string }{
		// Verbatim from seed 004 (Polyaxon).
		{"status:succeeded, params.activation:relu|sigmoid, metrics.loss:<=0.3", "t0001 t0002"},
		{"", "t0001 t0002 t0003 t0004 t0005 t0006 t0010"},
		{"   ", "t0001 t0002 t0003 t0004 t0005 t0006 t0010"},
		{"status:~succeeded", "t0004 t0006 t0010"},
		{"status:~failed|waiting", "t0001 t0002 t0003 t0005 t0006"},
		{"status:SUCCEEDED,metrics.loss:<0.3", "t0001 t0003"},
		{"metrics.loss:>0.3", "t0005"},
		{"metrics.loss:>=0.3", "t0002 t0005"},
		{"metrics.loss:0.1..0.3", "t0001 t0002 t0003"},
		{"metrics.loss:~0.1..0.3", "t0005"}, // trials without loss match no condition on it
		{"metric:<0.2", "t0003"},
		{"params.lr:0.1", "t0001 t0003"},
		{"params.lr:<=0.01", "t0002 t0005"},
		{"params.lr:0.1..0.3", "t0001 t0003 t0006 t0010"},
		{"params.activation:tanh", "t0003"},
		{"params.activation:\"relu\"", "t0001 t0004 t0005 t0010"},
		{"id:t0003|t0005", "t0003 t0005"},
		{"seq:>=6", "t0006 t0010"},
		{"generation:1, attempts:1, status:failed", "t0004"},
		{"duration:>5m", "t0002 t0005"},
		{"duration:<=30s", "t0003 t0004"},
		{"duration:30..60", "t0001 t0003"},
		{"duration:<1d", "t0001 t0002 t0003 t0004 t0005"}, // days, as in HCL's max_duration
		{"duration:>0.001d", "t0002 t0005"},
		{"started_at:2024-05-01", "t0001 t0002"},
		{"started_at:>2024-05-02", "t0005 t0006"},
		{"started_at:<=2024-05-02", "t0001 t0002 t0003 t0004"},
		{"started_at:<2024-05-02", "t0001 t0002"},
		{"started_at:2024-05-01..2024-05-02", "t0001 t0002 t0003 t0004"},
		{"ended_at:>=2024-05-02T09:00:30Z", "t0003 t0004 t0005"},
		{"ended_at:2024-05-01T10:01", "t0001"},
		{"experiment:mnist, status:running", "t0006"},
	} {
		q, err := Parse(tc.q)
		if err != nil {
			t.Errorf("Parse(%q): %v", tc.q, err)
			continue
		}
		if got := ids(q.Filter(rows())); got != tc.want {
			t.Errorf("%q matched %q, want %q", tc.q, got, tc.want)
		}
		// The canonical form parses to the same matches.
		q2, err := Parse(q.String())
		if err != nil {
			t.Errorf("Parse(String()=%q): %v", q.String(), err)
			continue
		}
		if got := ids(q2.Filter(rows())); got != tc.want {
			t.Errorf("%q (canonical %q) matched %q, want %q", tc.q, q.String(), got, tc.want)
		}
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct {
		q   string
		col int
		msg string
	}{
		{"parms.lr:0.1", 1, `did you mean "params.lr"?`},
		{"status:succeeded, metrcs.loss:<1", 19, `did you mean "metrics.loss"?`},
		{"stauts:failed", 1, `did you mean "status"?`},
		{"metrics.loss:abc", 14, "metrics.loss is a number, not \"abc\""},
		{"metric:<=x", 10, "metric is a number"},
		{"status:succeded", 8, `did you mean "succeeded"?`},
		{"status:<running", 8, "status cannot be compared with <"},
		{"id:a..b", 5, "id has no ranges"},
		{"status", 1, "has no ':'"},
		{"status:", 8, "missing value"},
		{"status:failed,,id:x", 15, "empty condition"},
		{"params.a:x|", 12, "empty alternative"},
		{"duration:>fast", 11, "duration is a duration"},
		{"started_at:yesterday", 12, "started_at is a time"},
		{"metrics.loss:..3", 14, "range needs a low end"},
		{"metrics.loss:1..", 17, "range needs a high end"},
		{"metric:5..1", 8, "range 5..1 is empty: write 1..5"},
		{"metrics.loss: 0.5 .. -1", 15, "range 0.5..-1 is empty: write -1..0.5"},
		{"params.opt:sgd..adam", 12, "range sgd..adam is empty: write adam..sgd"},
		{"duration:1h..10m", 10, "range 1h..10m is empty: write 10m..1h"},
		{"started_at:2024-01-02..2024-01-01", 12, "range 2024-01-02..2024-01-01 is empty: write 2024-01-01..2024-01-02"},
		{`params.a:"open`, 10, "unterminated quoted string"},
		{`params.a:ab"c`, 12, "unterminated quoted string"},
		{`params.a:ab"c"`, 12, "quote inside a value"},
		{"params:1", 1, "name the params"},
		{"nonsense:1", 1, "fields:"},
		{"metrics.loss:NaN", 14, "is a number"},
	} {
		_, err := Parse(tc.q)
		e, ok := err.(*Error)
		if !ok {
			t.Errorf("Parse(%q) = %v, want *Error", tc.q, err)
			continue
		}
		if e.Column() != tc.col || !strings.Contains(e.Msg, tc.msg) {
			t.Errorf("Parse(%q): column %d %q; want column %d containing %q", tc.q, e.Column(), e.Msg, tc.col, tc.msg)
		}
	}
}

func TestCaret(t *testing.T) {
	_, err := Parse("status:succeeded, parms.lr:1")
	want := "  status:succeeded, parms.lr:1\n                    ^"
	if got := err.(*Error).Caret("  "); got != want {
		t.Errorf("caret:\n%s\nwant:\n%s", got, want)
	}
	// Columns count characters, not bytes.
	_, err = Parse("params.é:1, x:1")
	if c := err.(*Error).Column(); c != 13 {
		t.Errorf("column after a multi-byte rune = %d, want 13", c)
	}
}

func TestCheck(t *testing.T) {
	sc := SchemaOf(rows())
	for _, tc := range []struct{ q, msg string }{
		{"params.lrr:0.1", `did you mean "params.lr"?`},
		{"metrics.los:<1", `did you mean "metrics.loss"?`},
		{"metrics.zzzzzzz:<1", "metrics: metrics.accuracy, metrics.loss"},
		{"params.lr:fast", "params.lr is a number in every trial"},
		{"params.lr:0.1..x", "params.lr is a number in every trial"},
	} {
		q, err := Parse(tc.q)
		if err != nil {
			t.Fatalf("Parse(%q): %v", tc.q, err)
		}
		err = q.Check(sc)
		if err == nil || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("Check(%q) = %v, want %q", tc.q, err, tc.msg)
		}
	}
	for _, ok := range []string{"params.activation:relu", "metrics.loss:<1", "params.lr:0.1", "status:failed"} {
		q, _ := Parse(ok)
		if err := q.Check(sc); err != nil {
			t.Errorf("Check(%q): %v", ok, err)
		}
	}
	// No trial reported anything yet: nothing to call a typo.
	q, _ := Parse("metrics.anything:<1")
	if err := q.Check(SchemaOf(nil)); err != nil {
		t.Errorf("Check on no rows: %v", err)
	}
}

func TestSort(t *testing.T) {
	for _, tc := range []struct{ s, want string }{
		{"-metrics.loss", "t0005 t0002 t0001 t0003 t0004 t0006 t0010"},
		{"metrics.loss", "t0003 t0001 t0002 t0005 t0004 t0006 t0010"},
		{"params.lr,-metrics.loss", "t0005 t0002 t0001 t0003 t0006 t0010 t0004"},
		{"-id", "t0010 t0006 t0005 t0004 t0003 t0002 t0001"},
		{"id", "t0001 t0002 t0003 t0004 t0005 t0006 t0010"},
		{"+params.activation,-params.lr", "t0004 t0010 t0001 t0005 t0006 t0002 t0003"},
		{"-duration", "t0005 t0002 t0001 t0003 t0004 t0006 t0010"},
		{"", "t0001 t0002 t0003 t0004 t0005 t0006 t0010"},
	} {
		s, err := ParseSort(tc.s)
		if err != nil {
			t.Fatalf("ParseSort(%q): %v", tc.s, err)
		}
		rs := rows()
		// Start from a shuffled order: the result must not depend on it.
		rs[0], rs[6] = rs[6], rs[0]
		rs[2], rs[4] = rs[4], rs[2]
		s.Apply(rs)
		if got := ids(rs); got != tc.want {
			t.Errorf("sort %q = %q, want %q", tc.s, got, tc.want)
		}
	}
	_, err := ParseSort("-metrics.loss,prams.lr")
	if e, ok := err.(*Error); !ok || e.Column() != 15 || !strings.Contains(e.Msg, `"params.lr"`) {
		t.Errorf("ParseSort typo: %v", err)
	}
	_, err = ParseSort("-metrics.loss,,x")
	if e, ok := err.(*Error); !ok || e.Column() != 15 {
		t.Errorf("ParseSort empty key: %v", err)
	}
}

func TestTop(t *testing.T) {
	if got := ids(Top(rows(), 2)); got != "t0003 t0001" {
		t.Errorf("Top 2 (minimize) = %q", got)
	}
	rs := rows()
	for _, r := range rs {
		r.Goal = "maximize"
	}
	if got := ids(Top(rs, 0)); got != "t0005 t0002 t0001 t0003" {
		t.Errorf("Top all (maximize) = %q", got)
	}
	// Several experiments: the n best of each, by each one's goal.
	rs = rows()
	for _, r := range rs[:3] {
		r.Experiment, r.Goal = "a", "maximize"
	}
	if got := ids(Top(rs, 1)); got != "t0002 t0005" {
		t.Errorf("Top 1 of two experiments = %q", got)
	}
}

// TestEveryStatusParses: every status the state can hold (each constant of
// state's status enum) is a valid status literal in any case, alone and in
// an alternation, and matches exactly the rows of that status. paused and
// user_canceled were refused as "not a status" before.
func TestEveryStatusParses(t *testing.T) {
	for _, st := range []string{state.Waiting, state.Running, state.Succeeded, state.Failed, state.Canceled,
		state.EarlyStopped, state.UserCanceled, state.Lost, state.Paused} {
		if !slices.Contains(state.Statuses, st) {
			t.Errorf("state.Statuses lacks %s", st)
		}
	}
	for _, st := range state.Statuses {
		for _, lit := range []string{st, strings.ToLower(st)} {
			q, err := Parse("status:" + lit)
			if err != nil {
				t.Errorf("status:%s: %v", lit, err)
				continue
			}
			if !q.Match(&results.Row{Status: st}) {
				t.Errorf("status:%s does not match a %s trial", lit, st)
			}
			if q.Match(&results.Row{Status: "X" + st}) {
				t.Errorf("status:%s matches a trial of another status", lit)
			}
		}
	}
	rs := rows()
	rs[0].Status, rs[1].Status = state.Paused, state.UserCanceled
	for _, tc := range []struct{ q, want string }{
		{"status:paused|running", "t0001 t0006"},
		{"status:user_canceled", "t0002"},
		{"status:~paused|user_canceled|succeeded", "t0004 t0006 t0010"},
	} {
		q, err := Parse(tc.q)
		if err != nil {
			t.Errorf("%s: %v", tc.q, err)
			continue
		}
		if got := ids(q.Filter(rs)); got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.q, got, tc.want)
		}
	}
}

// TestREADMEListsEveryStatus: the docs' table of query fields
// (docs/results.md) names every status a status condition accepts.
func TestREADMEListsEveryStatus(t *testing.T) {
	_, sec, err := docs.Section("../..", "Looking at results")
	if err != nil {
		t.Fatal(err)
	}
	var row string
	for _, l := range strings.Split(sec, "\n") {
		if strings.HasPrefix(l, "| `status` |") {
			row = l
		}
	}
	if row == "" {
		t.Fatal("docs: no row starting with \"| `status` |\" in the query fields table")
	}
	for _, st := range Statuses {
		if !slices.Contains(strings.FieldsFunc(row, func(r rune) bool { return r == ' ' || r == '`' || r == '|' }), strings.ToLower(st)) {
			t.Errorf("the docs' status row %q lacks %s", row, strings.ToLower(st))
		}
	}
}

// TestProvenanceFields: commit matches a prefix of at least 4 hex digits
// (git's short ids), code_commit the code_dir's, dirty either flag; a
// trial without provenance matches none of them; a literal that is no
// commit is an error naming the field.
func TestProvenanceFields(t *testing.T) {
	rows := []*results.Row{
		{ID: "t0000", Provenance: &state.Provenance{Commit: "abc123def4567890abc123def4567890abc12345", CodeCommit: "ffff000011112222333344445555666677778888", Version: "0.1.0"}},
		{ID: "t0001", Provenance: &state.Provenance{Commit: "abd0000000000000000000000000000000000000", Dirty: true}},
		{ID: "t0002"},
	}
	match := func(src string) []string {
		t.Helper()
		q, err := Parse(src)
		if err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		var ids []string
		for _, r := range rows {
			if q.Match(r) {
				ids = append(ids, r.ID)
			}
		}
		return ids
	}
	for src, want := range map[string]string{
		"commit:abc123":            "t0000",
		"commit:ABC1":              "t0000",
		"commit:ab00|abd0":         "t0001",
		"code_commit:ffff0":        "t0000",
		"dirty:true":               "t0001",
		"dirty:false":              "t0000",
		"commit:~abc1":             "t0001",
		"version:0.1.0":            "t0000",
		"commit:abc123,dirty:true": "",
	} {
		if got := strings.Join(match(src), ","); got != want {
			t.Errorf("%s matched %q, want %q", src, got, want)
		}
	}
	for _, bad := range []string{"commit:abc", "commit:xyz123", "dirty:yes"} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("%s parsed", bad)
		}
	}
}

// A nested choice (NNI's {"_name": "cnn", "k": 3}) is matched by the name
// of the option taken, and params.arch.k names a parameter inside it; the
// schema knows both (a query on them is not an unknown field). They
// matched nothing, or were refused as unknown.
func TestNestedChoiceParams(t *testing.T) {
	rows := []*results.Row{
		{ID: "t0000", Params: map[string]any{"arch": map[string]any{"_name": "cnn", "k": 3.0}, "lr": 0.1}},
		{ID: "t0001", Params: map[string]any{"arch": map[string]any{"_name": "mlp"}, "lr": 0.2}},
		{ID: "t0002", Params: map[string]any{"arch": map[string]any{"_name": "cnn", "k": 5.0}, "lr": 0.3}},
	}
	s := SchemaOf(rows)
	for q, want := range map[string]string{
		"params.arch:mlp":                 "t0001",
		"params.arch:cnn":                 "t0000 t0002",
		"params.arch.k:3":                 "t0000",
		"params.arch.k:>=3":               "t0000 t0002",
		"params.arch:cnn, params.lr:<0.2": "t0000",
	} {
		parsed, err := Parse(q)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		if err := parsed.Check(s); err != nil {
			t.Errorf("%s: %v", q, err)
			continue
		}
		var got []string
		for _, r := range parsed.Filter(rows) {
			got = append(got, r.ID)
		}
		if strings.Join(got, " ") != want {
			t.Errorf("%s: %v, want %s", q, got, want)
		}
	}
	if v, ok := ParamValue(rows[0].Params, "arch"); !ok || v != "cnn" {
		t.Errorf("ParamValue(arch) = %v, %v", v, ok)
	}
	if _, ok := ParamValue(rows[1].Params, "arch.k"); ok {
		t.Error("arch.k of the mlp option, which has none, was found")
	}
}

// A range is refused only when it matches nothing for sure: equal ends,
// a time inside the high end's span, or a number and a word (params
// compare numbers as numbers, text lexically) parse.
func TestRangeNotEmpty(t *testing.T) {
	for _, q := range []string{
		"metric:1..1", "duration:60..1m", "started_at:2024-05-01..2024-05-01",
		"started_at:2024-05-01T10:00..2024-05-01", "params.a:5..abc", "params.a:b..b",
	} {
		if _, err := Parse(q); err != nil {
			t.Errorf("Parse(%q): %v", q, err)
		}
	}
}

// -top ranks the trials that compete for the best trial: succeeded ones of
// the experiment's current generation. -top 1 named a generation-1 trial
// (another search space) while the footer said "Best of generation 2"
// another, and an early-stopped trial with a strategy's value could rank.
func TestTopIsOfTheCurrentGeneration(t *testing.T) {
	rs := rows()
	for _, r := range rs {
		r.CurrentGeneration = 2
		if r.Seq >= 2 {
			r.Generation = 2
		}
	}
	rs[0].Metric = fp(0.01) // t0001: generation 1, better than any
	es := rs[4]             // t0005
	es.Status, es.Metric = state.EarlyStopped, fp(0.05)
	if got := ids(Top(rs, 0)); got != "t0003 t0002" {
		t.Errorf("Top all = %q, want generation 2's succeeded trials t0003 t0002", got)
	}
}

// A value that is not a number (a final result's NaN or infinity in one of
// its metrics) sorts after every number, in both directions, as a missing
// value does: NaN compared equal to everything, so the sort's order
// depended on where the rows started.
func TestSortNaN(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	mk := func() []*results.Row {
		var rs []*results.Row
		for i, v := range []float64{0.5, nan, 0.1, inf, 0.3, nan, 0.2, 0.4} {
			rs = append(rs, &results.Row{Experiment: "e", ID: TrialIDForTest(i), Seq: i, Metrics: map[string]float64{"acc": v}})
		}
		return rs
	}
	for spec, want := range map[string]string{
		"metrics.acc":  "t0002 t0006 t0004 t0007 t0000 t0003 t0001 t0005",
		"-metrics.acc": "t0003 t0000 t0007 t0004 t0006 t0002 t0001 t0005",
	} {
		s, err := ParseSort(spec)
		if err != nil {
			t.Fatal(err)
		}
		for shift := 0; shift < 8; shift++ {
			rs := mk()
			rs = append(rs[shift:], rs[:shift]...)
			s.Apply(rs)
			if got := ids(rs); got != want {
				t.Errorf("sort %q from rotation %d = %q, want %q", spec, shift, got, want)
			}
		}
	} // A NaN is no value for conditions either, negated or not.
	for q, want := range map[string]string{
		"metrics.acc:~<0.3": "t0000 t0003 t0004 t0007",
		"metrics.acc:>0.3":  "t0000 t0003 t0007",
	} {
		qq, err := Parse(q)
		if err != nil {
			t.Fatal(err)
		}
		if got := ids(qq.Filter(mk())); got != want {
			t.Errorf("%q matched %q, want %q", q, got, want)
		}
	}
}
