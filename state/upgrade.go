package state

import (
	"encoding/json"
	"fmt"
)

// upgrades turns a state document of format version v into one of version
// v+1. Load applies them in a chain up to FormatVersion. To change the
// format: bump FormatVersion, add the step from the previous version here,
// and add a fixture of the previous version under testdata/.
var upgrades = map[int]func(doc []byte) ([]byte, error){
	0: upgradeV0,
}

// upgrade brings doc from version from to FormatVersion.
func upgrade(doc []byte, from int) ([]byte, error) {
	for v := from; v < FormatVersion; v++ {
		step, ok := upgrades[v]
		if !ok {
			return nil, fmt.Errorf("no upgrade from format version %d", v)
		}
		var err error
		doc, err = step(doc)
		if err != nil {
			return nil, fmt.Errorf("upgrade from format version %d to %d: %w", v, v+1, err)
		}
	}
	return doc, nil
}

// upgradeV0 upgrades the pre-release draft format: experiments and their
// trials were lists rather than maps keyed by name and id, and trials had
// no parameter_id (it was the sequence number) while experiments had no
// next_seq. Fields it does not know are carried over unchanged.
func upgradeV0(doc []byte) ([]byte, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(doc, &top); err != nil {
		return nil, err
	}
	var exps []map[string]json.RawMessage
	if raw, ok := top["experiments"]; ok {
		if err := json.Unmarshal(raw, &exps); err != nil {
			return nil, fmt.Errorf("experiments: %w", err)
		}
	}
	byName := make(map[string]map[string]json.RawMessage, len(exps))
	for i, e := range exps {
		var name string
		if err := json.Unmarshal(e["name"], &name); err != nil || name == "" {
			return nil, fmt.Errorf("experiment #%d has no name", i+1)
		}
		if _, dup := byName[name]; dup {
			return nil, fmt.Errorf("experiment %q appears twice", name)
		}
		var trials []map[string]json.RawMessage
		if raw, ok := e["trials"]; ok {
			if err := json.Unmarshal(raw, &trials); err != nil {
				return nil, fmt.Errorf("experiment %q: trials: %w", name, err)
			}
		}
		byID := make(map[string]map[string]json.RawMessage, len(trials))
		next := 0
		for j, t := range trials {
			var id string
			if err := json.Unmarshal(t["id"], &id); err != nil || id == "" {
				return nil, fmt.Errorf("experiment %q: trial #%d has no id", name, j+1)
			}
			var seq int
			if raw, ok := t["seq"]; ok {
				if err := json.Unmarshal(raw, &seq); err != nil {
					return nil, fmt.Errorf("experiment %q: trial %s: seq: %w", name, id, err)
				}
			}
			if _, ok := t["parameter_id"]; !ok {
				t["parameter_id"] = t["seq"]
			}
			next = max(next, seq+1)
			byID[id] = t
		}
		if _, ok := e["next_seq"]; !ok {
			e["next_seq"] = json.RawMessage(fmt.Sprint(next))
		}
		var err error
		if e["trials"], err = marshalRaw(byID); err != nil {
			return nil, err
		}
		byName[name] = e
	}
	var err error
	if top["experiments"], err = marshalRaw(byName); err != nil {
		return nil, err
	}
	top["version"] = json.RawMessage("1")
	return json.Marshal(top)
}

func marshalRaw(v any) (json.RawMessage, error) {
	b, err := json.Marshal(v)
	return json.RawMessage(b), err
}
