package results

import (
	"math"
	"strconv"
	"time"

	"github.com/trialform/trialform/state"
)

// RowJSON is one trial in `trials -o json|jsonl`, in `export -o json` and
// in the dashboard's API. Fields are only ever added.
type RowJSON struct {
	Experiment   string             `json:"experiment"`
	ID           string             `json:"id"`
	Seq          int                `json:"seq"`
	Generation   int                `json:"generation"`
	Status       string             `json:"status"`
	Reason       string             `json:"reason,omitempty"`
	Params       map[string]any     `json:"params"`
	Metric       *float64           `json:"metric"`
	Metrics      map[string]float64 `json:"metrics"`
	Intermediate int                `json:"intermediate"`
	Attempts     int                `json:"attempts"`
	ExitCode     *int               `json:"exit_code,omitempty"`
	StartedAt    *time.Time         `json:"started_at,omitempty"`
	EndedAt      *time.Time         `json:"ended_at,omitempty"`
	// DurationS is the run time in seconds (ended trials); ElapsedS the
	// time so far (running trials).
	DurationS *float64 `json:"duration_s,omitempty"`
	ElapsedS  *float64 `json:"elapsed_s,omitempty"`
	Best      bool     `json:"best,omitempty"`
	// ParetoRank is the trial's Pareto rank with several objectives (1 =
	// on the front; Best is then true); absent otherwise.
	ParetoRank int `json:"pareto_rank,omitempty"`
	// Latest and BestIntermediate are set for running and early-stopped
	// trials (and for every trial when the series was read).
	Latest           *Point `json:"latest,omitempty"`
	BestIntermediate *Point `json:"best_intermediate,omitempty"`
	// Series is the intermediate series (`-with-intermediate`, export).
	Series []Point `json:"series,omitempty"`
	// Provenance is what the trial was created from.
	Provenance *state.Provenance `json:"provenance,omitempty"`
}

// JSON returns r's JSON model.
func (r *Row) JSON() RowJSON {
	return RowJSON{
		Experiment: r.Experiment, ID: r.ID, Seq: r.Seq, Generation: r.Generation, Status: r.Status,
		Reason: r.Reason, Params: r.Params, Metric: r.Metric, Metrics: r.Metrics,
		Intermediate: r.Intermediate, Attempts: r.Attempts, ExitCode: r.ExitCode,
		StartedAt: r.StartedAt, EndedAt: r.EndedAt, DurationS: seconds(r.Duration), ElapsedS: seconds(r.Elapsed),
		Best: r.Best, ParetoRank: r.ParetoRank, Latest: r.Latest, BestIntermediate: r.BestIntermediate, Series: r.Series,
		Provenance: r.Provenance,
	}
}

func seconds(d *time.Duration) *float64 {
	if d == nil {
		return nil
	}
	s := d.Seconds()
	return &s
}

// CSVHeader returns the columns of the CSV form of rows with these params
// and metrics: fixed columns, then metrics.NAME and params.NAME, one per
// name, so pandas.read_csv loads it as it is.
func CSVHeader(params, metrics []string) []string { return CSVHeaderRanked(params, metrics, false) }

// CSVHeaderRanked is CSVHeader with, when ranked (an experiment with
// several objectives), a last pareto_rank column.
func CSVHeaderRanked(params, metrics []string, ranked bool) []string {
	h := csvHeader(params, metrics)
	if ranked {
		h = append(h, "pareto_rank")
	}
	return h
}

func csvHeader(params, metrics []string) []string {
	h := []string{"experiment", "id", "seq", "generation", "status", "metric"}
	for _, m := range metrics {
		h = append(h, "metrics."+m)
	}
	for _, p := range params {
		h = append(h, "params."+p)
	}
	return append(h, "duration_s", "elapsed_s", "started_at", "ended_at", "attempts", "intermediate", "latest", "best_intermediate", "reason")
}

// CSVRecord returns r's CSV record for CSVHeader(params, metrics). A
// missing value is an empty field; numbers are written in Go's shortest
// form (NaN and infinities as pandas reads them: nan, inf, -inf); times in
// RFC 3339.
func (r *Row) CSVRecord(params, metrics []string) []string {
	return r.CSVRecordRanked(params, metrics, false)
}

// CSVRecordRanked is CSVRecord for CSVHeaderRanked: with ranked, the
// trial's Pareto rank last ("" when it has none).
func (r *Row) CSVRecordRanked(params, metrics []string, ranked bool) []string {
	rec := r.csvRecord(params, metrics)
	if ranked {
		rank := ""
		if r.ParetoRank > 0 {
			rank = strconv.Itoa(r.ParetoRank)
		}
		rec = append(rec, rank)
	}
	return rec
}

// Ranked reports whether any row has a Pareto rank.
func Ranked(rows []*Row) bool {
	for _, r := range rows {
		if r.ParetoRank > 0 {
			return true
		}
	}
	return false
}

func (r *Row) csvRecord(params, metrics []string) []string {
	rec := make([]string, 0, 15+len(params)+len(metrics))
	rec = append(rec, r.Experiment, r.ID, strconv.Itoa(r.Seq), strconv.Itoa(r.Generation), r.Status, FormatFloatPtr(r.Metric))
	for _, m := range metrics {
		if v, ok := r.Metrics[m]; ok {
			rec = append(rec, FormatFloat(v))
		} else {
			rec = append(rec, "")
		}
	}
	for _, p := range params {
		rec = append(rec, FormatParam(r.Params[p]))
	}
	var latest, best string
	if r.Latest != nil {
		latest = FormatFloatPtr(r.Latest.Value)
	}
	if r.BestIntermediate != nil {
		best = FormatFloatPtr(r.BestIntermediate.Value)
	}
	return append(rec, FormatFloatPtr(seconds(r.Duration)), FormatFloatPtr(seconds(r.Elapsed)),
		formatTime(r.StartedAt), formatTime(r.EndedAt), strconv.Itoa(r.Attempts), strconv.Itoa(r.Intermediate),
		latest, best, r.Reason)
}

// FormatFloat writes a number for machines: shortest round-trip form;
// nan, inf, -inf.
func FormatFloat(f float64) string {
	switch {
	case math.IsNaN(f):
		return "nan"
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// FormatFloatPtr is FormatFloat, "" for nil.
func FormatFloatPtr(f *float64) string {
	if f == nil {
		return ""
	}
	return FormatFloat(*f)
}

// FormatParam writes a parameter value for machines ("" when absent).
func FormatParam(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case float64:
		return FormatFloat(x)
	case int:
		return strconv.Itoa(x)
	case bool:
		return strconv.FormatBool(x)
	}
	b, err := jsonMarshal(v)
	if err != nil {
		return ""
	}
	return string(b)
}

func formatTime(t *time.Time) string {
	if t == nil {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}
