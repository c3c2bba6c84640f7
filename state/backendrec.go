package state

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"

	"github.com/trialform/trialform/internal/fsread"
	"github.com/trialform/trialform/internal/fsx"
)

// The working copy's record of its backend: what `trialform init`
// initialized (Terraform keeps the analogue in .terraform/). Commands
// compare the configuration's backend block with it and refuse to go on
// when they differ, so that a changed block never silently points a
// working copy at an empty state (or at someone else's). Only the kind and
// the settings that are not credentials are recorded: a credential is
// never written here.
//
// No record means the local backend, as before there were others.

// backendRecordName is the record's file in the state directory.
const backendRecordName = "backend.json"

// BackendRecord is what `trialform init` records.
type BackendRecord struct {
	// Kind is the backend kind ("local", "pg", "kubernetes").
	Kind string `json:"kind"`
	// Settings are the backend block's settings that are not credentials
	// (schema.Backend.Settings), as JSON values.
	Settings map[string]any `json:"settings,omitempty"`
	// Location is where the backend pointed when init recorded it (its
	// Location: server, database, schema; never a credential), for a
	// shared backend: a credential setting (pg's conn_str) or the
	// environment may name the server, and they are not recorded. Not
	// part of Same: commands compare it with the opened backend's.
	Location string `json:"location,omitempty"`
}

// Same reports whether r and o name the same backend with the same
// settings (a missing setting and an empty one differ).
func (r BackendRecord) Same(o BackendRecord) bool {
	return r.Kind == o.Kind && reflect.DeepEqual(normalized(r.Settings), normalized(o.Settings))
}

// ChangedSettings names the settings whose values differ, sorted.
func (r BackendRecord) ChangedSettings(o BackendRecord) []string {
	a, b := normalized(r.Settings), normalized(o.Settings)
	var out []string
	for k, v := range a {
		if !reflect.DeepEqual(v, b[k]) {
			out = append(out, k)
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// normalized is settings as they read back from JSON (numbers as float64),
// so a record compares equal to the block it was written from.
func normalized(m map[string]any) map[string]any {
	if len(m) == 0 {
		return map[string]any{}
	}
	b, err := json.Marshal(m)
	if err != nil {
		return m
	}
	var out map[string]any
	if json.Unmarshal(b, &out) != nil {
		return m
	}
	return out
}

// RecordedBackend returns the backend recorded in the state directory
// dir, or nil when none is (the local backend).
func RecordedBackend(dir string) (*BackendRecord, error) {
	path := filepath.Join(dir, backendRecordName)
	b, err := fsread.ReadFile(path, fsread.MaxConfig)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the working copy's backend record: %w", err)
	}
	var r BackendRecord
	if err := json.Unmarshal(b, &r); err != nil || r.Kind == "" {
		if err == nil {
			err = errors.New("it names no kind")
		}
		return nil, fmt.Errorf("the working copy's backend record %s cannot be read (%v): run `trialform init -reconfigure` to write it again", path, err)
	}
	return &r, nil
}

// RecordBackend records r as the working copy's backend in the state
// directory dir (atomically: a crash leaves the old record or the new).
// A record of the local backend without settings removes the record, so
// a working copy that went back to local looks as it always did.
func RecordBackend(dir string, r BackendRecord) error {
	path := filepath.Join(dir, backendRecordName)
	if r.Kind == LocalBackend && len(r.Settings) == 0 {
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("record the backend: %w", err)
		}
		return nil
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("record the backend: %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("record the backend: %w", err)
	}
	if err := fsx.WriteFileAtomic(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("record the backend in %s: %w", path, err)
	}
	return nil
}

// String is "pg (conn_str=..., schema_name=...)" for messages: the kind
// and its recorded settings.
func (r BackendRecord) String() string {
	if len(r.Settings) == 0 {
		return r.Kind
	}
	var parts []string
	for _, k := range sortedKeys(r.Settings) {
		parts = append(parts, fmt.Sprintf("%s=%v", k, r.Settings[k]))
	}
	return r.Kind + " (" + strings.Join(parts, ", ") + ")"
}
