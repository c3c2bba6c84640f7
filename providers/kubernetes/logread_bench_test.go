package kubernetes

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/trialform/trialform/providers/trialproto"
)

// BenchmarkLogCursorRead is one running pod's log as a cursorless
// refresh reads it (TestBench1000's log: 40 timestamped lines, 20 of them
// metric records), through the collector: its CPU and allocations are the
// client's share of each of a refresh's 1,000 log reads.
func BenchmarkLogCursorRead(b *testing.B) {
	var log bytes.Buffer
	t0 := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	for i := 0; i < 20; i++ {
		ts := t0.Add(time.Duration(i) * time.Second).Format(time.RFC3339Nano)
		fmt.Fprintf(&log, "%s epoch %d\n", ts, i)
		fmt.Fprintf(&log, "%s NNISDK_MEb'{\"type\": \"PERIODICAL\", \"sequence\": %d, \"value\": \"%g\"}'\n", ts, i, 0.5+float64(i)/100)
	}
	raw := log.Bytes()
	b.ReportAllocs()
	b.SetBytes(int64(len(raw)))
	for b.Loop() {
		var cur logCursor
		col := trialproto.Collector{ParameterID: 1}
		n := 0
		if _, err := cur.read(bytes.NewReader(raw), false, false, maxLogRead, func(line string, ts int64) {
			if _, ok := col.Line(line); ok {
				n++
			}
		}); err != nil {
			b.Fatal(err)
		}
		if n != 20 {
			b.Fatalf("%d metrics, want 20", n)
		}
	}
}
