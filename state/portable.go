package state

import (
	"fmt"
	"maps"
	"slices"
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
// two trials of an experiment with one sequence number, a negative one.
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
		}
	}
	return nil
}
