package state

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
