package state

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// refreshedFile records when each experiment was last refreshed from its
// platform. It lives beside state.json rather than in it: a refresh that
// finds nothing new must not rewrite a large state, bump its serial (which
// would make a saved plan stale) or change its format. It is advisory
// (`trials` and `show` print the age); a missing, unreadable or foreign
// file just means "never refreshed".
const refreshedFile = "refreshed.json"

// refreshedVersion is the format of refreshed.json.
const refreshedVersion = 1

type refreshedDoc struct {
	Version int `json:"version"`
	// Lineage ties the record to one state: a record of another state
	// (a state replaced by hand) is ignored.
	Lineage     string               `json:"lineage"`
	Experiments map[string]time.Time `json:"experiments"`
}

// MarkRefreshed records that the named experiments of the state with
// lineage were refreshed at t. Callers hold the state lock.
func (m *Manager) MarkRefreshed(lineage string, experiments []string, t time.Time) error {
	if len(experiments) == 0 {
		return nil
	}
	doc := m.readRefreshed(lineage)
	for _, e := range experiments {
		doc.Experiments[e] = t.UTC()
	}
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return err
	}
	path := filepath.Join(m.dir, refreshedFile)
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("record refresh time: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("record refresh time: %w", err)
	}
	return nil
}

// RefreshedAt returns when each experiment of the state with lineage was
// last refreshed from its platform (absent: never, as far as is known).
func (m *Manager) RefreshedAt(lineage string) map[string]time.Time {
	return m.readRefreshed(lineage).Experiments
}

func (m *Manager) readRefreshed(lineage string) refreshedDoc {
	fresh := refreshedDoc{Version: refreshedVersion, Lineage: lineage, Experiments: map[string]time.Time{}}
	b, err := os.ReadFile(filepath.Join(m.dir, refreshedFile))
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			return fresh
		}
		return fresh
	}
	var doc refreshedDoc
	if json.Unmarshal(b, &doc) != nil || doc.Version != refreshedVersion || doc.Lineage != lineage || doc.Experiments == nil {
		return fresh
	}
	return doc
}
