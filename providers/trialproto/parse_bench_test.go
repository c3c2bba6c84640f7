package trialproto

import (
	"fmt"
	"testing"
)

// BenchmarkParseStdoutLine parses NNI SDK lines as a pod log holds them
// (the kubernetes first refresh decodes 20,000 of them for 1,000 trials).
func BenchmarkParseStdoutLine(b *testing.B) {
	lines := []string{
		`NNISDK_MEb'{"parameter_id": 3, "trial_job_id": "t0003", "type": "PERIODICAL", "sequence": 7, "value": "0.5712"}'`,
		`NNISDK_MEb'{"parameter_id": 3, "trial_job_id": "t0003", "type": "FINAL", "sequence": 0, "value": "{\\"default\\": 0.93, \\"loss\\": 0.12}"}'`,
		`NNISDK_MEb'{"type": "PERIODICAL", "sequence": 3, "value": "NaN"}'`,
	}
	for i, line := range lines {
		b.Run(fmt.Sprint(i), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if m, ok := ParseStdoutLine(line, nil); !ok || m.Garbage != "" {
					b.Fatalf("%q: %+v", line, m)
				}
			}
		})
	}
}
