package backendtest_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/trialform/trialform/state"
	"github.com/trialform/trialform/state/backendtest"
)

// The local backend (the files of a .trialform directory) through the
// suite. Its faults are what a crash or a person does to those files.
func TestLocalBackend(t *testing.T) {
	backendtest.Run(t, func(t *testing.T) *backendtest.Store {
		dir := filepath.Join(t.TempDir(), ".trialform")
		journal := filepath.Join(dir, state.JournalName)
		// records returns the journal's records, each with its newline.
		records := func(t *testing.T) [][]byte {
			data, err := os.ReadFile(journal)
			if err != nil {
				t.Fatal(err)
			}
			return bytes.SplitAfter(bytes.TrimSuffix(data, []byte("\n")), []byte("\n"))
		}
		write := func(t *testing.T, path string, data []byte) {
			if err := os.WriteFile(path, data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return &backendtest.Store{
			Open: func() state.Backend { return state.Open(dir) },
			// A record's write interrupted: part of its line, no newline.
			TearLastChange: func(t *testing.T, keep float64) {
				recs := records(t)
				last := recs[len(recs)-1]
				cut := min(max(1, int(keep*float64(len(last)))), len(last)-1)
				recs[len(recs)-1] = last[:cut]
				write(t, journal, bytes.Join(recs, nil))
			},
			// A byte of record n's payload flipped.
			CorruptChange: func(t *testing.T, n int) {
				recs := records(t)
				if n >= len(recs) {
					t.Fatalf("the journal has %d records: %d is the last or past it", len(recs), n)
				}
				rec := bytes.Clone(recs[n-1])
				rec[len(rec)/2] ^= 0x01
				recs[n-1] = rec
				write(t, journal, bytes.Join(recs, nil))
			},
			// state.json deleted (by hand, or a lost disk's copy).
			LoseState: func(t *testing.T) {
				if err := os.Remove(filepath.Join(dir, state.FileName)); err != nil {
					t.Fatal(err)
				}
			},
			// An append interrupted: a point without its newline.
			TearMetrics: func(t *testing.T, experiment, trial string) {
				f, err := os.OpenFile(filepath.Join(dir, "metrics", experiment, trial+".jsonl"), os.O_WRONLY|os.O_APPEND, 0)
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				if _, err := f.WriteString(`{"type":"PERIODICAL","seque`); err != nil {
					t.Fatal(err)
				}
			},
		}
	})
}
