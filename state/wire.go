package state

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// Wire types for decoding a whole state in one pass. Trial has its own
// UnmarshalJSON (non-finite values are written as strings), which makes
// encoding/json scan every trial three times; decoding into these mirrors
// instead touches only the two float fields with a custom decoder, which
// roughly halves the time to load a long history.

type (
	stateJSON      State
	experimentJSON Experiment
)

type stateWire struct {
	*stateJSON
	Experiments map[string]*experimentWire `json:"experiments"`
}

type experimentWire struct {
	experimentJSON
	Trials map[string]*trialWire `json:"trials"`
}

type trialWire struct {
	trialJSON
	Value *jsonFloat           `json:"value,omitempty"`
	Final map[string]jsonFloat `json:"final,omitempty"`
}

// jsonFloat is a number or one of the strings MarshalJSON writes for
// non-finite values.
type jsonFloat float64

func (f *jsonFloat) UnmarshalJSON(b []byte) error {
	// The decoder hands over one valid JSON value: one that starts like a
	// number is a JSON number, which strconv parses as encoding/json does.
	if len(b) > 0 && (b[0] == '-' || b[0] >= '0' && b[0] <= '9') {
		if v, err := strconv.ParseFloat(string(b), 64); err == nil {
			*f = jsonFloat(v)
			return nil
		}
	}
	v, ok := parseFloatJSON(b)
	if !ok {
		return fmt.Errorf("state: %s is not a number", b)
	}
	*f = jsonFloat(v)
	return nil
}

// wireOptions make the decoder (go-json-experiment/json, about twice as
// fast as encoding/json on a long history) accept what encoding/json
// accepts in a state file: invalid UTF-8 in strings (replaced) and a name
// given twice (the last wins), as a hand-edited file may have.
var wireOptions = jsonv2.JoinOptions(jsontext.AllowInvalidUTF8(true), jsontext.AllowDuplicateNames(true), jsonv2.MatchCaseInsensitiveNames(true))

// decodeWire decodes data into a State; nil entries stay nil (decode
// reports them). A file it refuses goes through decodeWireV1, whose
// errors (encoding/json's) say what is wrong in the words users know.
func decodeWire(data []byte) (*State, error) {
	return decodeWireWith(data, func(w *stateWire) error { return jsonv2.Unmarshal(data, w, wireOptions) })
}

// decodeWireV1 is decodeWire with encoding/json.
func decodeWireV1(data []byte) (*State, error) {
	return decodeWireWith(data, func(w *stateWire) error { return json.Unmarshal(data, w) })
}

func decodeWireWith(data []byte, unmarshal func(*stateWire) error) (*State, error) {
	w := stateWire{stateJSON: new(stateJSON)}
	if err := unmarshal(&w); err != nil {
		return nil, err
	}
	if w.stateJSON == nil {
		// A document of just null: no state (decode says what it is).
		return nil, errors.New("the document is null, not an object")
	}
	s := (*State)(w.stateJSON)
	s.Experiments = nil
	if w.Experiments != nil {
		s.Experiments = make(map[string]*Experiment, len(w.Experiments))
	}
	for name, ew := range w.Experiments {
		if ew == nil {
			s.Experiments[name] = nil
			continue
		}
		e := new(Experiment)
		*e = Experiment(ew.experimentJSON)
		e.Trials = nil
		if ew.Trials != nil {
			e.Trials = make(map[string]*Trial, len(ew.Trials))
		}
		for id, tw := range ew.Trials {
			if tw == nil {
				e.Trials[id] = nil
				continue
			}
			t := new(Trial)
			*t = Trial(tw.trialJSON)
			t.Value = (*float64)(tw.Value)
			t.Final = nil
			if tw.Final != nil {
				t.Final = make(map[string]float64, len(tw.Final))
				for k, v := range tw.Final {
					t.Final[k] = float64(v)
				}
			}
			e.Trials[id] = t
		}
		s.Experiments[name] = e
	}
	return s, nil
}
