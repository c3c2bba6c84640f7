package state

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"hash/crc32"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trialform/trialform/internal/fuzzseed"
)

// FuzzJournal feeds the journal reader journals it did not write (a disk
// that tore a write, a hand edit, another program). With framed, each
// line of data is a record's payload and gets its checksum, so the fuzzer
// reaches the JSON behind the checksums; else data is the whole journal.
// The journal is replayed on top of testdata/journal/state.json.
//
// Properties: no panic; an error is a *JournalError naming a record that
// is in the file; the valid part ends at a record's end; a journal that
// replays is one that state.json could hold: the state it gives encodes
// to a state file that decodes (with every check state.json gets: names,
// ids, no nulls) to the same state; and the journal cut anywhere (a write
// torn by a crash) replays without error to the state of the records
// before the cut.
func FuzzJournal(f *testing.F) {
	base, err := os.ReadFile(filepath.Join("testdata", "journal", "state.json"))
	if err != nil {
		f.Fatal(err)
	}
	real, err := os.ReadFile(filepath.Join("testdata", "journal", JournalName))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(real, false, 0)
	f.Fuzz(func(t *testing.T, data []byte, framed bool, cut int) {
		journal := data
		if framed {
			journal = frameLines(data)
		}
		s, js, err := replayOn(t, base, journal)
		if err != nil {
			var je *JournalError
			if !errors.As(err, &je) {
				t.Fatalf("error %T, want *JournalError: %v", err, err)
			}
			if je.Record < 1 || je.Offset < 0 || je.Offset >= int64(len(journal)) || !strings.Contains(err.Error(), "journal") {
				t.Fatalf("error names record %d at offset %d of a %d-byte journal: %v", je.Record, je.Offset, len(journal), err)
			}
			return
		}
		if js.valid < 0 || js.valid > int64(len(journal)) || (js.valid > 0 && journal[js.valid-1] != '\n' && js.foreign == "") {
			t.Fatalf("valid %d of %d bytes, not at a record's end", js.valid, len(journal))
		}
		enc, err := encodeWhole(s)
		if err != nil {
			t.Fatalf("the replayed state does not encode: %v", err)
		}
		back, _, err := decode("state.json", enc.withSerial(s.Serial))
		if err != nil {
			t.Fatalf("the replayed state, written as state.json, does not read back: %v", err)
		}
		if a, b := jsonOf(t, s), jsonOf(t, back); a != b {
			t.Fatalf("the replayed state changed through state.json:\n%s\n%s", a, b)
		}
		if js.foreign != "" || len(journal) == 0 {
			return
		}
		c := int(uint(cut) % uint(len(journal)))
		ps, pjs, err := replayOn(t, base, journal[:c])
		if err != nil {
			t.Fatalf("journal cut at %d: %v", c, err)
		}
		end := bytes.LastIndexByte(journal[:c], '\n') + 1
		ws, _, err := replayOn(t, base, journal[:end])
		if err != nil || pjs.valid != int64(end) {
			t.Fatalf("journal cut at %d: valid %d, want %d (%v)", c, pjs.valid, end, err)
		}
		if a, b := jsonOf(t, ps), jsonOf(t, ws); a != b {
			t.Fatalf("journal cut at %d is not the state of the records before the cut:\n%s\n%s", c, a, b)
		}
	})
}

func replayOn(t *testing.T, base, journal []byte) (*State, *journalState, error) {
	s, _, err := decode("state.json", base)
	if err != nil {
		t.Fatal(err)
	}
	js := &journalState{}
	err = replayJournal(JournalName, journal, s, js)
	return s, js, err
}

// frameLines makes each line of payloads a journal record with its
// checksum (a last line without a newline stays without one: torn).
func frameLines(payloads []byte) []byte {
	var out []byte
	for len(payloads) > 0 {
		line, rest, found := bytes.Cut(payloads, []byte("\n"))
		c := crc32.Checksum(line, crcTable)
		out = hex.AppendEncode(out, []byte{byte(c >> 24), byte(c >> 16), byte(c >> 8), byte(c)})
		out = append(out, ' ')
		out = append(out, line...)
		if found {
			out = append(out, '\n')
		}
		payloads = rest
	}
	return out
}

func jsonOf(t *testing.T, s *State) string {
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestWriteFuzzSeeds writes FuzzJournal's seed corpus (run with
// TRIALFORM_WRITE_SEEDS=1): the fixture journal as it is and as payloads,
// and hostile records.
func TestWriteFuzzSeeds(t *testing.T) {
	if os.Getenv("TRIALFORM_WRITE_SEEDS") != "1" {
		t.Skip("TRIALFORM_WRITE_SEEDS=1 writes the seed corpus")
	}
	real, err := os.ReadFile(filepath.Join("testdata", "journal", JournalName))
	if err != nil {
		t.Fatal(err)
	}
	var payloads []byte
	for _, line := range bytes.SplitAfter(real, []byte("\n")) {
		if len(line) > 9 {
			payloads = append(payloads, line[9:]...)
		}
	}
	const lin = `"lineage":"a100387e-f0b0-41a6-97d9-ea18b13c8114"`
	trial := `{"id":"t00009","seq":9,"status":"RUNNING","created_at":"2026-01-02T03:04:05Z"}`
	seeds := []struct {
		name   string
		data   string
		framed bool
	}{
		{"fixture", string(real), false},
		{"fixture-torn", string(real[:len(real)-20]), false},
		{"fixture-payloads", string(payloads), true},
		{"crc-mismatch", "00000000 {}\n", false},
		{"no-checksum", "zzzzzzzz {}\n", false},
		{"short-line", "abc\n", false},
		{"not-json", "{\n", true},
		{"other-lineage", `{"lineage":"x","serial":9}` + "\n", true},
		{"serial-gap", `{` + lin + `,"serial":9}` + "\n", true},
		{"serial-old", `{` + lin + `,"serial":1}` + "\n" + `{` + lin + `,"serial":2}` + "\n", true},
		{"new-trial", `{` + lin + `,"serial":2,"trials":{"mnist":{"t00009":` + trial + `}}}` + "\n", true},
		{"new-experiment", `{` + lin + `,"serial":2,"experiments":{"new":{"name":"new","platform":"local.default"}},"trials":{"new":{"t1":{"id":"t1"}}}}` + "\n", true},
		{"trial-of-missing-experiment", `{` + lin + `,"serial":2,"trials":{"nope":{"t1":{"id":"t1"}}}}` + "\n", true},
		{"experiment-name-traversal", `{` + lin + `,"serial":2,"experiments":{"../../x":{"name":"../../x"}}}` + "\n", true},
		{"trial-id-traversal", `{` + lin + `,"serial":2,"trials":{"mnist":{"../t":{"id":"../t"}}}}` + "\n", true},
		{"experiment-name-mismatch", `{` + lin + `,"serial":2,"experiments":{"a":{"name":"b"}}}` + "\n", true},
		{"trial-id-mismatch", `{` + lin + `,"serial":2,"trials":{"mnist":{"t1":{"id":"t2"}}}}` + "\n", true},
		{"remove-all", `{` + lin + `,"serial":2,"experiments":{"mnist":null,"cifar":null}}` + "\n", true},
		{"huge-serial", `{` + lin + `,"serial":18446744073709551616}` + "\n", true},
		{"empty", "", false},
	}
	for _, s := range seeds {
		if err := fuzzseed.Write("FuzzJournal", s.name, []byte(s.data), s.framed, len(s.data)/2); err != nil {
			t.Fatal(err)
		}
	}
}
