package state

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// A state as one document, for `trialform state pull` and `state push`:
// the local backend's file format (whichever backend the state comes from
// or goes to), so a pulled state can be pushed to any backend.

// Encode returns s as a state document (the current format, s's serial).
func Encode(s *State) ([]byte, error) {
	e, err := encodeWhole(s)
	if err != nil {
		return nil, err
	}
	return append(e.withSerial(s.Serial), '\n'), nil
}

// Decode reads a state document (name says where it came from, for
// errors), upgrading an older format as Load does: *CorruptError when it
// is no state, *NewerFormatError when a newer trialform wrote it.
func Decode(name string, data []byte) (*State, error) {
	s, _, err := decode(name, data)
	return s, err
}

// Check finds what a state document holds that trialform never writes,
// beyond what Decode refuses: a trial status that is not one of Statuses,
// two trials of an experiment with one sequence number, a negative one, a
// trial whose id does not say its sequence number, an experiment whose
// next_seq does not lie past every trial's (new trials would be numbered
// over its trials: plan proposes them and apply skips them, on every run).
// state push refuses such a document (a hand edit gone wrong) rather than
// make it the state every command then reads.
func Check(s *State) error {
	for _, name := range slices.Sorted(maps.Keys(s.Experiments)) {
		e := s.Experiments[name]
		seqs := map[int]string{}
		for _, id := range slices.Sorted(maps.Keys(e.Trials)) {
			t := e.Trials[id]
			if !slices.Contains(Statuses, t.Status) {
				return fmt.Errorf("trial %q of experiment %q has status %q, which is none of %s", id, name, t.Status, strings.Join(Statuses, ", "))
			}
			if t.Seq < 0 {
				return fmt.Errorf("trial %q of experiment %q has a negative seq %d", id, name, t.Seq)
			}
			if other, ok := seqs[t.Seq]; ok {
				return fmt.Errorf("trials %q and %q of experiment %q have the same seq %d", other, id, name, t.Seq)
			}
			seqs[t.Seq] = id
			if want := trialID(t.Seq); id != want {
				if n, ok := idSeq(id); ok {
					return fmt.Errorf("trial %q of experiment %q has seq %d, but its id says seq %d: set seq to %d", id, name, t.Seq, n, n)
				}
				return fmt.Errorf("trial %q of experiment %q has an id trialform never gives: a trial's id is t and its seq (%q for seq %d)", id, name, want, t.Seq)
			}
		}
		if e.NextSeq < 0 {
			return fmt.Errorf("experiment %q has a negative next_seq %d; set it to 0", name, e.NextSeq)
		}
		if len(seqs) > 0 {
			last := slices.Max(slices.Collect(maps.Keys(seqs)))
			if e.NextSeq <= last {
				return fmt.Errorf("experiment %q has next_seq %d, but it holds trial %q (seq %d): new trials would be numbered over its trials; set next_seq to %d (or more)",
					name, e.NextSeq, seqs[last], last, last+1)
			}
		}
	}
	return nil
}

// trialID is the id trialform gives the trial of sequence number seq
// (plan.TrialID).
func trialID(seq int) string { return fmt.Sprintf("t%04d", seq) }

// idSeq is the sequence number a trial id of trialID's form says.
func idSeq(id string) (int, bool) {
	digits, ok := strings.CutPrefix(id, "t")
	if !ok || len(digits) < 4 || strings.Trim(digits, "0123456789") != "" {
		return 0, false
	}
	n, err := strconv.Atoi(digits)
	if err != nil || trialID(n) != id {
		return 0, false
	}
	return n, true
}
