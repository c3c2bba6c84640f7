package cloudjob

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/trialform/trialform/internal/fsx"
	"github.com/trialform/trialform/providers"
	"github.com/trialform/trialform/providers/codedir"
)

// record is a trial's file on the shared mount (trial.json): who owns the
// trial, what it was started with and its attempts' jobs. It is written
// before each job is submitted, so a crash between the two leaves a job
// name to find again, never a second job.
type record struct {
	Version     int             `json:"version"`
	Experiment  string          `json:"experiment"`
	TrialID     string          `json:"trial_id"`
	Nonce       string          `json:"nonce"` // makes job names of a trial created again (after a purge) new
	Owner       providers.Owner `json:"owner"`
	Seq         int             `json:"seq"`
	ParameterID int             `json:"parameter_id"`
	Params      map[string]any  `json:"params"`
	MaxDuration time.Duration   `json:"max_duration,omitempty"`
	MetricRegex string          `json:"metric_regex,omitempty"`
	Attempts    []attempt       `json:"attempts"`
}

// attempt is one job of the trial.
type attempt struct {
	Name      string    `json:"name"`
	ID        string    `json:"id,omitempty"` // "" until Submit answered
	Submitted time.Time `json:"submitted"`
	// Stopped says why trialform stopped the job ("" if it did not).
	Stopped string `json:"stopped,omitempty"`
	// PastMaxDuration: trialform stopped it because it ran past the
	// trial's max_duration (Stopped says so in words).
	PastMaxDuration bool `json:"past_max_duration,omitempty"`
}

func (r *record) last() *attempt {
	if len(r.Attempts) == 0 {
		return nil
	}
	return &r.Attempts[len(r.Attempts)-1]
}

// safeName is compiled on first use, not at every start of the binary
// (a counted repeat compiles to a large program).
var safeName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$`) })

// checkNames refuses an experiment or trial id that is no safe path element.
func checkNames(exp, trial string) error {
	for _, s := range []string{exp, trial} {
		if !safeName().MatchString(s) || strings.Contains(s, "..") {
			return providers.Permanent(fmt.Errorf("name %q cannot be a directory on the shared storage: use letters, digits, '.', '_' and '-'", s))
		}
	}
	return nil
}

// layout maps the shared storage's paths on this machine and in containers.
type layout struct{ local, container string }

func (l layout) root() string { return filepath.Join(l.local, "trialform") }

func (l layout) expDir(exp string) string { return filepath.Join(l.root(), "trials", exp) }

func (l layout) trialDir(exp, trial string) string { return filepath.Join(l.expDir(exp), trial) }

// inContainer maps a local path under the mount to the container's path.
func (l layout) inContainer(local string) string {
	rel, err := filepath.Rel(l.local, local)
	if err != nil {
		return local
	}
	return path.Join(l.container, filepath.ToSlash(rel))
}

func (l layout) recordPath(exp, trial string) string {
	return filepath.Join(l.trialDir(exp, trial), "trial.json")
}

// exitPath is where the job's command writes its exit status.
func (l layout) exitPath(exp, trial string) string {
	return filepath.Join(l.trialDir(exp, trial), "exit-status")
}

// logPath is the trial's output on the mount (Options.LogsOnMount).
func (l layout) logPath(exp, trial string) string {
	return filepath.Join(l.trialDir(exp, trial), "trial.log")
}

// readRecord returns the trial's record; nil when there is none.
func (l layout) readRecord(exp, trial string) (*record, error) {
	b, err := os.ReadFile(l.recordPath(exp, trial))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var r record
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: %w (remove the trial with `trialform destroy`, or the file, to start it again)", l.recordPath(exp, trial), err)
	}
	return &r, nil
}

// writeRecord replaces the record atomically; with create it fails with
// fs.ErrExist when another writer created it first.
func (l layout) writeRecord(r *record, create bool) error {
	p := l.recordPath(r.Experiment, r.TrialID)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if !create {
		return fsx.WriteFileAtomic(p, b, 0o644)
	}
	tmp := p + ".new-" + randHex(4)
	if err := fsx.WriteFileAtomic(tmp, b, 0o644); err != nil {
		return err
	}
	defer os.Remove(tmp)
	return os.Link(tmp, p)
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// jobName is the deterministic name of the trial's attempt n: short, valid
// on every service, unique per record.
func jobName(r *record, n int) string {
	slug := strings.Map(func(c rune) rune {
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
			return c
		case c >= 'A' && c <= 'Z':
			return c + 'a' - 'A'
		}
		return '-'
	}, r.TrialID)
	if len(slug) > 28 {
		slug = slug[:28]
	}
	sum := sha256.Sum256([]byte(r.Experiment + "\x00" + r.TrialID + "\x00" + r.Nonce))
	return fmt.Sprintf("tf-%s-%s-%d", strings.Trim(slug, "-"), hex.EncodeToString(sum[:4]), n)
}

// shipCode copies dir to the mount once per content digest and returns the
// copy's local path (with dry, only the path). What is shipped is the same
// on every platform (providers/codedir): the ignore files' rules, never
// .git, .trialform or __pycache__, nor the mount itself when it is inside
// dir; NNI's limits.
func (l layout) shipCode(dir string, dry bool) (string, error) {
	code, err := codedir.Scan(dir, l.local)
	if err != nil {
		return "", err
	}
	digest, err := code.Digest()
	if err != nil {
		return "", err
	}
	dest := filepath.Join(l.root(), "code", digest)
	if dry {
		return dest, nil
	}
	if _, err := os.Stat(filepath.Join(dest, ".trialform-complete")); err == nil {
		return dest, nil
	}
	tmp := dest + ".tmp-" + randHex(4)
	defer os.RemoveAll(tmp)
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return "", err
	}
	for _, f := range code.Files {
		to := filepath.Join(tmp, filepath.FromSlash(f.Rel))
		switch {
		case f.Mode.IsDir():
			err = os.MkdirAll(to, 0o755)
		case f.Mode.IsRegular():
			err = copyFile(code.Path(f), to, f.Mode.Perm())
		}
		if err != nil {
			return "", err
		}
	}
	if err := os.WriteFile(filepath.Join(tmp, ".trialform-complete"), nil, 0o644); err != nil {
		return "", err
	}
	if err := os.Rename(tmp, dest); err != nil {
		// Another Start shipped the same content first.
		if _, serr := os.Stat(filepath.Join(dest, ".trialform-complete")); serr == nil {
			return dest, nil
		}
		return "", err
	}
	return dest, nil
}

func copyFile(from, to string, mode fs.FileMode) error {
	src, err := os.Open(from)
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode|0o200)
	if err != nil {
		return err
	}
	if _, err := io.Copy(dst, src); err != nil {
		dst.Close()
		return err
	}
	return dst.Close()
}
