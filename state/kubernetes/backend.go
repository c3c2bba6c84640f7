// Package k8sstate is the "kubernetes" state backend: the state of a
// working copy kept in Secrets of one namespace, so that a team sharing a
// cluster shares its experiments, and locked with coordination.k8s.io
// Leases, one per experiment and one for the whole state.
//
// The objects, all labelled trialform.dev/state=SUFFIX (secret_suffix),
// so several states live in one namespace:
//
//	Secret trialform-state-SUFFIX            the index: lineage, serial,
//	                                         and for each experiment the
//	                                         Secrets holding its parts
//	Secret trialform-state-SUFFIX-p-RANDOM   one part: an experiment's
//	                                         head (its fields) or a bucket
//	                                         of 1024 of its trials (by
//	                                         sequence number), gzip'd JSON,
//	                                         in several Secrets (chunks)
//	                                         past chunkSize
//	Secret trialform-series-SUFFIX-HASH[-N]  one trial's metric series
//	                                         (gzip'd JSON lines), N > 0:
//	                                         its continuations
//	Secret trialform-marks-SUFFIX            the refresh marks
//	Lease  trialform-lock-SUFFIX             the whole-state lock
//	Lease  trialform-lock-SUFFIX-HASH        one experiment's lock
//	Lease  trialform-claim-SUFFIX            the controller claim (claim.go):
//	                                         no lock, renewed by its holder
//	                                         and taken over when not renewed
//
// A save writes the parts that changed as new Secrets, then replaces the
// index with an update conditional on its resourceVersion (the one
// atomic step: readers read the index first, so they see the parts of
// one version or of the next), then deletes the replaced parts. A save
// under an experiment lock writes only that experiment's parts; its
// conflict check is the experiment's revision in the index.
package k8sstate

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/hcl/v2"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/trialform/trialform/controller/election"
	"github.com/trialform/trialform/internal/incluster"

	"github.com/trialform/trialform/internal/decl"
	"github.com/trialform/trialform/state"
	"github.com/trialform/trialform/state/backendreg"
)

// Name is the backend's kind.
const Name = "kubernetes"

// Settings is a backend "kubernetes" block.
type Settings struct {
	Namespace    string `hcl:"namespace,optional" doc:"namespace of the state's Secrets and Leases (default the kubeconfig context's, then default)"`
	SecretSuffix string `hcl:"secret_suffix,optional" type:"a string (lowercase letters, digits and -)" doc:"names this state among others in the namespace (default \"default\")"`
	ConfigPath   string `hcl:"config_path,optional" type:"a string (a kubeconfig path)" doc:"kubeconfig path, relative to the configuration directory (default $KUBECONFIG, then ~/.kube/config)"`
	Context      string `hcl:"context,optional" type:"a string (a kubeconfig context)" doc:"kubeconfig context (default the current one)"`
	InCluster    bool   `hcl:"in_cluster,optional" doc:"use the pod's service account (KUBERNETES_SERVICE_HOST and its token file) instead of a kubeconfig"`
}

// Registration is the kind's registration for state/backends.
func Registration() backendreg.Kind {
	return backendreg.Kind{
		Name:    Name,
		Summary: "the state in Secrets of a Kubernetes namespace, locked with Leases (one per experiment)",
		Config:  func() any { return &Settings{} },
		Open: func(cfg any, env backendreg.Env) (state.Backend, error) {
			s, _ := cfg.(*Settings)
			if s == nil {
				s = &Settings{}
			}
			return Open(*s, env)
		},
	}
}

// validSuffix reports whether s is 1 to 40 lowercase letters, digits and
// "-", starting and ending with a letter or digit (what the regexp
// ^[a-z0-9]([-a-z0-9]{0,38}[a-z0-9])?$ accepts; plain code, as a counted
// repeat compiled at every start costs the binary's start-up).
func validSuffix(s string) bool {
	if len(s) < 1 || len(s) > 40 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
		case c == '-' && i > 0 && i < len(s)-1:
		default:
			return false
		}
	}
	return true
}

// Open opens the backend the settings name. It does not connect: the
// first call does.
func Open(s Settings, env backendreg.Env) (*Backend, error) {
	getenv := env.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	suffix := s.SecretSuffix
	if suffix == "" {
		suffix = "default"
	}
	if !validSuffix(suffix) {
		return nil, fmt.Errorf(`backend "kubernetes": secret_suffix = %q: use at most 40 lowercase letters, digits and "-", starting and ending with a letter or digit`, suffix)
	}
	var cfg *rest.Config
	ns := s.Namespace
	if s.InCluster {
		var err error
		if cfg, err = incluster.Config(); err != nil {
			return nil, fmt.Errorf(`backend "kubernetes": in_cluster = true but %v; run it in a pod, or set config_path instead`, err)
		}
		if ns == "" {
			ns, _ = incluster.Namespace()
		}
	} else {
		rules := &clientcmd.ClientConfigLoadingRules{}
		where := ""
		switch {
		case s.ConfigPath != "":
			p := expandHome(s.ConfigPath)
			if !filepath.IsAbs(p) && env.StateDir != "" {
				p = filepath.Join(filepath.Dir(env.StateDir), p)
			}
			rules.ExplicitPath, where = p, p
		case getenv("KUBECONFIG") != "":
			rules.Precedence = filepath.SplitList(getenv("KUBECONFIG"))
			where = "$KUBECONFIG (" + getenv("KUBECONFIG") + ")"
		default:
			p := expandHome("~/.kube/config")
			rules.Precedence, where = []string{p}, p
		}
		cc := incluster.ClientConfig(clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: s.Context}))
		var err error
		if cfg, err = cc.ClientConfig(); err != nil {
			return nil, fmt.Errorf(`backend "kubernetes": the kubeconfig %s: %s; set config_path and context, or in_cluster = true in a pod`, where, KubeconfigProblem(err))
		}
		if ns == "" {
			if n, _, err := cc.Namespace(); err == nil {
				ns = n
			}
		}
	}
	if ns == "" {
		ns = "default"
	}
	b, err := New(cfg, ns, suffix)
	if err != nil {
		return nil, err
	}
	b.SetReporter(env.Report)
	return b, nil
}

// KubeconfigProblem says what is wrong with a kubeconfig without quoting
// it (it may hold a token); the controller's leader election says it so
// too.
func KubeconfigProblem(err error) string {
	if clientcmd.IsEmptyConfig(err) {
		return "no kubeconfig found, or it has no current context"
	}
	msg := err.Error()
	if strings.Contains(msg, "context was not found") {
		return "the context is not in it"
	}
	if len(msg) > 300 {
		msg = msg[:300]
	}
	return msg
}

func expandHome(p string) string {
	if p == "~" || strings.HasPrefix(p, "~/") {
		if h, err := os.UserHomeDir(); err == nil {
			return filepath.Join(h, p[1:])
		}
	}
	return p
}

// New returns the backend of the state called suffix in namespace ns of
// the cluster cfg reaches (tests pass their own config).
func New(cfg *rest.Config, ns, suffix string) (*Backend, error) {
	b := &Backend{ns: ns, suffix: suffix, leaseDuration: defaultLeaseDuration, claimDuration: defaultClaimDuration}
	c, err := newClient(cfg, ns, func(msg string) { b.reportf("%s", msg) })
	if err != nil {
		return nil, fmt.Errorf(`backend "kubernetes": %v`, err)
	}
	b.c = c
	return b, nil
}

// Backend is the kubernetes backend (state.Backend). It is safe for
// concurrent use.
type Backend struct {
	ns, suffix string
	c          *client

	// leaseDuration is how long a Lease not renewed is taken as the
	// holder's (then it is stale, and waits for force-unlock).
	leaseDuration time.Duration
	// claimDuration is how long the controller claim not renewed stays
	// its holder's (claim.go); claimObs is the claim's Lease as this
	// client last saw it change (a standby's tries share it).
	claimDuration time.Duration
	claimObs      election.Observed
	// claimPause, in tests, is called at each turn of a claim's renewal
	// (a test blocks it to pause the holder, as SIGSTOP would).
	claimPause func()
	// beforeIndexWrite, in tests, runs in a save right before each
	// write of the index (after the check that its locks are held).
	beforeIndexWrite func()

	reportMu sync.Mutex
	reporter func(string)

	// nsFound is set once the namespace is known to exist
	// (checkNamespace).
	nsFound atomic.Bool

	// mu is held for a whole read or save; a read with a context
	// (LoadContext, PeekContext) gives its wait up when the context
	// ends.
	mu    ctxMutex
	cache *cached // what this client last read or wrote of the state
	// peeked is what Peek last read: its parts are reused by the next
	// Peek (a reader that never loads, `trialform ui`, would read every
	// part changed since it started at each Peek), and it is never a
	// save's base.
	peeked *cached
	// partReads counts the parts read from Secrets (tests).
	partReads atomic.Int64
	loaded    *index // the index of the state Load last returned
	// trustRefs: the stored state is what this client last saved, so a
	// PrepareTrials' names account for every difference.
	trustRefs bool
	warnings  []string
	held      *heldLocks // the locks this client holds now
	// lockMu guards held as well (it changes under both): metric appends
	// read it without waiting for a save.
	lockMu sync.Mutex
	// waiting is the holder a lock wait of this client last met (for
	// tests: the wait has begun).
	waiting atomic.Pointer[state.LockedError]

	marksMu sync.Mutex
	marks   *marksCache

	seriesMu sync.Mutex
	series   map[string]int // a series' last chunk, as last seen
}

// SetReporter sets what a message for people (the apiserver could not be
// reached; it is back) goes to: the command layer's view (Env.Report).
// Without one the messages are dropped: this package writes nothing itself.
func (b *Backend) SetReporter(f func(string)) {
	b.reportMu.Lock()
	b.reporter = f
	b.reportMu.Unlock()
}

func (b *Backend) reportf(format string, args ...any) {
	b.reportMu.Lock()
	f := b.reporter
	b.reportMu.Unlock()
	if f == nil {
		return
	}
	f("state backend kubernetes: " + fmt.Sprintf(format, args...))
}

// Name returns "kubernetes".
func (b *Backend) Name() string { return Name }

// Location names the index Secret.
func (b *Backend) Location() string {
	return fmt.Sprintf("Secret %s/%s (%s)", b.ns, b.indexName(), b.c.host)
}

// Namespace and Suffix say where the state is.
func (b *Backend) Namespace() string { return b.ns }

// Warnings returns what the last Load or Save noticed.
func (b *Backend) Warnings() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.warnings...)
}

func (b *Backend) warn(format string, args ...any) {
	b.warnings = append(b.warnings, fmt.Sprintf(format, args...))
}

// Object names and labels.

const (
	labelState = "trialform.dev/state"
	labelRole  = "trialform.dev/role"
	labelExp   = "trialform.dev/experiment" // a hash of the name: labels are short
	annotExp   = "trialform.dev/experiment"
	annotTrial = "trialform.dev/trial"
	annotPart  = "trialform.dev/part"
	annotLock  = "trialform.dev/lock-info"
	managedBy  = "app.kubernetes.io/managed-by"

	roleIndex  = "index"
	rolePart   = "part"
	roleSeries = "series"
	roleMarks  = "marks"
	roleLock   = "lock"
)

func (b *Backend) indexName() string  { return "trialform-state-" + b.suffix }
func (b *Backend) marksName() string  { return "trialform-marks-" + b.suffix }
func (b *Backend) stateLease() string { return "trialform-lock-" + b.suffix }
func (b *Backend) expLease(exp string) string {
	return "trialform-lock-" + b.suffix + "-" + hashName(exp)
}

func (b *Backend) labels(role string) map[string]string {
	return map[string]string{labelState: b.suffix, labelRole: role, managedBy: "trialform"}
}

func (b *Backend) selector(role string) string {
	s := labelState + "=" + b.suffix
	if role != "" {
		s += "," + labelRole + "=" + role
	}
	return s
}

// hashName is a short, label-safe stand-in for a name.
func hashName(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:8])
}

func background() (context.Context, context.CancelFunc) {
	return within(context.Background())
}

// within is ctx, ended after 10 minutes at the latest.
func within(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, 10*time.Minute)
}

var errNoState = errors.New("no state")

// The whole contract and its options.
var (
	_ state.Backend          = (*Backend)(nil)
	_ state.ExperimentLocker = (*Backend)(nil)
	_ state.ChangeNotifier   = (*Backend)(nil)
	_ state.StateStamper     = (*Backend)(nil)
	_ state.MetricsStamper   = (*Backend)(nil)
	_ state.Replacer         = (*Backend)(nil)
)

// Check checks the settings that go together and the suffix's form, so
// that a bad block is an error at its line.
func (s *Settings) Check(w *decl.Where) hcl.Diagnostics {
	var diags hcl.Diagnostics
	if s.SecretSuffix != "" && !validSuffix(s.SecretSuffix) {
		diags = append(diags, w.Error("secret_suffix", "Invalid secret_suffix", `secret_suffix = %q: use at most 40 lowercase letters, digits and "-", starting and ending with a letter or digit (it is part of Secret and Lease names).`, s.SecretSuffix))
	}
	if s.InCluster && (s.ConfigPath != "" || s.Context != "") {
		path := "config_path"
		if s.ConfigPath == "" {
			path = "context"
		}
		diags = append(diags, w.Error(path, "Conflicting settings", "in_cluster = true uses the pod's service account: remove %s, or in_cluster.", path))
	}
	return diags
}
