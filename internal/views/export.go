package views

import (
	"bufio"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/trialform/trialform/internal/results"
	"github.com/trialform/trialform/state"
)

// ExportFormatVersion is the version of `trialform export`'s JSON and CSV
// schema (docs/results.md, "Export format").
const ExportFormatVersion = "1"

// ExportExperiment is one experiment's header in an export.
type ExportExperiment struct {
	Name      string `json:"name"`
	ID        string `json:"id"`
	Platform  string `json:"platform"`
	Objective string `json:"objective"`
	Goal      string `json:"goal"`
	// Strategy is how each trial's "metric" was taken: "min", "max" or
	// "latest" of every value it reported; absent: its final result.
	Strategy   string `json:"strategy,omitempty"`
	Generation int    `json:"generation"`
	// Objectives is every objective when the experiment has several
	// (Objective and Goal are the first); each trial then carries its
	// pareto_rank. Absent for one objective.
	Objectives []state.Objective `json:"objectives,omitempty"`
	// Params and Metrics name every parameter and final metric of the
	// experiment's trials (CSV columns).
	Params  []string `json:"params"`
	Metrics []string `json:"metrics"`
	// Rows yields the experiment's trials one at a time, each with its
	// series loaded, so an export never holds more than one series.
	Rows func(yield func(*results.Row) error) error `json:"-"`
}

// ExportJSON streams experiments as one JSON document:
// {"format_version", "exported_at", "experiments": [{..., "trials": [...]}]}.
func ExportJSON(w io.Writer, exps []ExportExperiment, now time.Time) error {
	bw := bufio.NewWriterSize(w, 256<<10)
	fmt.Fprintf(bw, "{\"format_version\":%q,\"exported_at\":%q,\"experiments\":[", ExportFormatVersion, now.UTC().Format(time.RFC3339Nano))
	for i, e := range exps {
		if i > 0 {
			bw.WriteString(",")
		}
		hdr, err := json.Marshal(e)
		if err != nil {
			return err
		}
		bw.Write(hdr[:len(hdr)-1]) // without the closing brace
		bw.WriteString(",\"trials\":[")
		n := 0
		var buf []byte
		err = e.Rows(func(r *results.Row) error {
			j := safeJSON(r.JSON())
			series := j.Series
			j.Series = nil
			b, err := json.Marshal(j)
			if err != nil {
				return fmt.Errorf("trial %s/%s: %w", r.Experiment, r.ID, err)
			}
			if len(series) > 0 {
				// The series by hand: a million points through
				// encoding/json's reflection is most of an export's time.
				buf = append(buf[:0], b[:len(b)-1]...)
				buf = append(buf, `,"series":[`...)
				for i := range series {
					if i > 0 {
						buf = append(buf, ',')
					}
					buf = series[i].AppendJSON(buf)
				}
				b = append(buf, "]}"...)
			}
			if n > 0 {
				bw.WriteByte(',')
			}
			n++
			bw.WriteString("\n")
			_, err = bw.Write(b)
			return err
		})
		if err != nil {
			return err
		}
		bw.WriteString("]}")
	}
	bw.WriteString("]}\n")
	return bw.Flush()
}

// ExportCSV streams experiments as CSV in long form: one row per trial
// (kind "trial") followed by one row per intermediate result (kind
// "intermediate", with step, step_value, step_time and step_metrics, a
// JSON object). Trial columns are results.CSVHeader's over the params and
// metrics of every experiment; format_version is the first column.
func ExportCSV(w io.Writer, exps []ExportExperiment) error {
	params, metrics := union(exps, func(e ExportExperiment) []string { return e.Params }), union(exps, func(e ExportExperiment) []string { return e.Metrics })
	bw := bufio.NewWriterSize(w, 256<<10)
	cw := csv.NewWriter(bw)
	ranked := false
	for _, e := range exps {
		ranked = ranked || len(e.Objectives) > 1
	}
	head := append([]string{"format_version", "kind"}, results.CSVHeaderRanked(params, metrics, ranked)...)
	head = append(head, "step", "step_value", "step_time", "step_metrics")
	if err := cw.Write(head); err != nil {
		return err
	}
	for _, e := range exps {
		err := e.Rows(func(r *results.Row) error {
			rec := append([]string{ExportFormatVersion, "trial"}, r.CSVRecordRanked(params, metrics, ranked)...)
			if err := cw.Write(append(rec, "", "", "", "")); err != nil {
				return err
			}
			empty := make([]string, len(rec)-6)
			for _, p := range r.Series {
				pm, _ := json.Marshal(p.Metrics)
				out := append([]string{ExportFormatVersion, "intermediate", r.Experiment, r.ID, strconv.Itoa(r.Seq), strconv.Itoa(r.Generation)}, empty...)
				out = append(out, strconv.Itoa(p.Step), results.FormatFloatPtr(p.Value), p.Time.UTC().Format(time.RFC3339Nano), string(pm))
				if err := cw.Write(out); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return err
	}
	return bw.Flush()
}

func union(exps []ExportExperiment, f func(ExportExperiment) []string) []string {
	seen := map[string]bool{}
	for _, e := range exps {
		for _, n := range f(e) {
			seen[n] = true
		}
	}
	out := make([]string, 0, len(seen))
	for n := range seen {
		out = append(out, n)
	}
	sortStrings(out)
	return out
}
