package state

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/trialform/trialform/internal/fsread"
	"github.com/trialform/trialform/internal/fsx"
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

// markResolution is how stale a refresh time may be left: the ages `trials`
// and `show` print are in seconds.
const markResolution = time.Second

// MarkRefreshed records that the named experiments of the state with
// lineage were refreshed at t. Callers hold the state lock. A mark that
// would move every named experiment's time by less than markResolution is
// not written: apply's loop refreshes many times a second when trials are
// short, and each write replaces the file (an inode created and one
// deleted, which on ext4 without a journal slows every file created after
// it, see internal/topdir).
func (m *Manager) MarkRefreshed(lineage string, experiments []string, t time.Time) error {
	if len(experiments) == 0 {
		return nil
	}
	m.markMu.Lock()
	defer m.markMu.Unlock()
	path := filepath.Join(m.dir, refreshedFile)
	if fi, err := os.Stat(path); err == nil && m.markedLineage == lineage && idOf(fi) == m.markedID {
		fresh := true
		for _, e := range experiments {
			at, ok := m.marked[e]
			if d := t.Sub(at); !ok || d < 0 || d >= markResolution {
				fresh = false
				break
			}
		}
		if fresh {
			return nil
		}
	}
	doc := m.readRefreshed(lineage)
	for _, e := range experiments {
		doc.Experiments[e] = t.UTC()
	}
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return err
	}
	// Advisory, so not flushed: after a crash the file may read back
	// empty, which means "never refreshed"; apply's loop is not held up by
	// an fsync a second.
	if err := fsx.ReplaceFile(path, append(b, '\n'), 0o644, fsx.Options{NoSync: true, NoSyncDir: true}); err != nil {
		return fmt.Errorf("record refresh time: %w", err)
	}
	m.marked, m.markedLineage, m.markedID = doc.Experiments, lineage, fileID{}
	if fi, err := os.Stat(path); err == nil {
		m.markedID = idOf(fi)
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
	// Never blocks (a FIFO in its place is refused): show, trials and
	// apply read it.
	b, err := fsread.ReadFile(filepath.Join(m.dir, refreshedFile), fsread.MaxConfig)
	if err != nil {
		return fresh // missing or unreadable: nothing is known
	}
	var doc refreshedDoc
	if json.Unmarshal(b, &doc) != nil || doc.Version != refreshedVersion || doc.Lineage != lineage || doc.Experiments == nil {
		return fresh
	}
	return doc
}
