package controller

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/trialform/trialform/internal/fsx"
)

// Approval is one approved held change.
type Approval struct {
	Change
	At time.Time `json:"at"`
	// By is who approved (free text the approver gives).
	By string `json:"by,omitempty"`
}

// Approvals is the controller's record of approved changes, kept in a
// JSON file in its work directory so it survives a restart. Safe for
// concurrent use.
type Approvals struct {
	path string
	mu   sync.Mutex
	list map[string]Approval // by experiment
}

// OpenApprovals reads path (missing: none approved).
func OpenApprovals(path string) (*Approvals, error) {
	a := &Approvals{path: path, list: map[string]Approval{}}
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return a, nil
	}
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(b, &a.list); err != nil {
		return nil, fmt.Errorf("%s: %w (remove the file to forget every approval)", path, err)
	}
	return a, nil
}

// Approves reports whether c is approved: the same experiment, the same
// spec hash and the same kind of change.
func (a *Approvals) Approves(c Change) bool {
	if a == nil {
		return false
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	got, ok := a.list[c.Experiment]
	return ok && got.Key() == c.Key()
}

// Add records an approval (replacing an earlier one of the experiment)
// and writes the file.
func (a *Approvals) Add(ap Approval) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.list[ap.Experiment] = ap
	return a.save()
}

// Done forgets the approval of c once applied.
func (a *Approvals) Done(c Change) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if got, ok := a.list[c.Experiment]; ok && got.Key() == c.Key() {
		delete(a.list, c.Experiment)
		return a.save()
	}
	return nil
}

func (a *Approvals) save() error {
	b, err := json.MarshalIndent(a.list, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(a.path), 0o755); err != nil {
		return err
	}
	return fsx.WriteFileAtomic(a.path, b, 0o600)
}
