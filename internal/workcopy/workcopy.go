// Package workcopy gives a working copy (a directory with its .trialform)
// an identity, so that several working copies sharing one state (a shared
// backend) tell their trials apart: a trial on a platform only one working
// copy can see (providers.Private: the local platform) records its owner,
// and the others leave it alone (state.Trial.Owner).
//
// The identity is a random id kept in the .trialform directory
// (IDFile), created the first time it is asked for: it moves with the
// directory, and a working copy made from the configuration and the state
// alone (a fresh clone sharing a backend) gets its own. The package knows
// nothing of backends or platforms.
package workcopy

import (
	"errors"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strings"

	"github.com/google/uuid"

	"github.com/trialform/trialform/state"
)

// IDFile is the file in the .trialform directory that holds the id.
const IDFile = "working-copy-id"

// Identify returns the identity of the working copy whose .trialform
// directory is stateDir, creating its id when it has none. Two processes
// that create it at once agree on one id (the first one written wins).
func Identify(stateDir string) (*state.WorkingCopy, error) {
	abs, err := filepath.Abs(stateDir)
	if err != nil {
		return nil, fmt.Errorf("working copy %s: %w", stateDir, err)
	}
	id, err := readOrCreate(filepath.Join(abs, IDFile))
	if err != nil {
		return nil, err
	}
	return &state.WorkingCopy{ID: id, Where: Where(abs)}, nil
}

// Where is how a person finds the working copy whose .trialform is dir:
// "user@host:dir".
func Where(dir string) string {
	who := os.Getenv("USER")
	if u, err := user.Current(); err == nil && u.Username != "" {
		who = u.Username
	}
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "localhost"
	}
	if who == "" {
		return host + ":" + dir
	}
	return who + "@" + host + ":" + dir
}

func readOrCreate(path string) (string, error) {
	if id, err := read(path); err == nil || !errors.Is(err, os.ErrNotExist) {
		return id, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "", fmt.Errorf("working copy id: %w", err)
	}
	// Written whole under a temporary name, then linked into place: a
	// reader never sees half an id, and of two creators the second's link
	// fails and it reads the first's.
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+IDFile+"-*")
	if err != nil {
		return "", fmt.Errorf("working copy id: %w", err)
	}
	defer os.Remove(tmp.Name())
	id := uuid.NewString()
	if _, err := tmp.WriteString(id + "\n"); err != nil {
		tmp.Close()
		return "", fmt.Errorf("working copy id: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return "", fmt.Errorf("working copy id: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return "", fmt.Errorf("working copy id: %w", err)
	}
	if err := os.Link(tmp.Name(), path); err != nil && !errors.Is(err, os.ErrExist) {
		return "", fmt.Errorf("working copy id: %w", err)
	}
	return read(path)
}

func read(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	id := strings.TrimSpace(string(b))
	if id == "" || strings.ContainsAny(id, " \t\n") {
		return "", fmt.Errorf("working copy id %s is damaged (%q): write back the id that this working copy's trials record as their owner (`trialform state show experiment.NAME.trial.ID` shows it), or remove the file to start a new identity (the trials it started are then taken for another working copy's: adopt them with `trialform apply -take-over`)", path, b)
	}
	return id, nil
}
