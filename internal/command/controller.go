package command

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/hcl/v2"

	"github.com/trialform/trialform/apply"
	"github.com/trialform/trialform/controller"
	"github.com/trialform/trialform/internal/incluster"
	"github.com/trialform/trialform/internal/ui"
	"github.com/trialform/trialform/internal/views"
	"github.com/trialform/trialform/plan"
	"github.com/trialform/trialform/schema"
	"github.com/trialform/trialform/state"
	"github.com/trialform/trialform/state/backendreg"
	k8sstate "github.com/trialform/trialform/state/kubernetes"
	pgstate "github.com/trialform/trialform/state/pg"
)

type controllerOptions struct {
	vars        varFlags
	lock        lockFlags
	repo        string
	branch      string
	path        string
	workDir     string
	interval    time.Duration
	maxBackoff  time.Duration
	policy      string
	listen      string
	gitUser     string
	tokenFile   string
	sshKeyFile  string
	knownHosts  string
	dashFile    string
	hookFile    string
	parallelism int
	leader      leaderOptions
	// claimDuration is how long the claim of a kubernetes state not
	// renewed stays its holder's.
	claimDuration time.Duration
}

// Environment variables the controller reads its secrets from when no
// file is named (a Kubernetes Secret mounted as env).
const (
	envGitToken  = "TRIALFORM_GIT_TOKEN"
	envGitSSHKey = "TRIALFORM_GIT_SSH_KEY"
	envDashToken = "TRIALFORM_DASHBOARD_TOKEN"
	envHookToken = "TRIALFORM_WEBHOOK_TOKEN"
)

func runController(ctx context.Context, g *Globals, args []string) int {
	// No loopGC here: the controller is a long-lived process, and at
	// GOGC=200 its heap at 10,000 trials peaked at 277 MB against 174 MB
	// at the default (bench/ctllat); a pass's plan time hardly differs.
	var o controllerOptions
	fs := flag.NewFlagSet("controller", flag.ContinueOnError)
	o.vars.register(fs)
	o.lock.register(fs)
	fs.StringVar(&o.repo, "repo", "", "git repository of the definitions: a URL (https://, ssh://, file://) or a local path")
	fs.StringVar(&o.branch, "branch", "main", "branch to follow")
	fs.StringVar(&o.path, "path", ".", "directory of the definitions inside the repository")
	fs.StringVar(&o.workDir, "work-dir", "", "where the checkout, the state directory and the approvals are kept (default: the current directory or -chdir)")
	fs.DurationVar(&o.interval, "interval", 30*time.Second, "time between passes (fetch, plan, apply)")
	fs.DurationVar(&o.maxBackoff, "max-backoff", 5*time.Minute, "longest wait between retries while the repository is unreachable")
	fs.StringVar(&o.policy, "policy", "auto", "auto (apply all but destructive changes, which are held until approved) or plan-only")
	fs.StringVar(&o.listen, "listen", "", "address for /healthz, /readyz, /metrics, /held and the dashboard (e.g. :8080)")
	fs.StringVar(&o.gitUser, "git-user", "", "user name for the git token or SSH key (default git)")
	fs.StringVar(&o.tokenFile, "git-token-file", "", "file holding an HTTPS access token (else $"+envGitToken+")")
	fs.StringVar(&o.sshKeyFile, "ssh-key-file", "", "file holding an SSH private key (else $"+envGitSSHKey+" holds the key itself)")
	fs.StringVar(&o.knownHosts, "ssh-known-hosts", "", "known_hosts file for SSH (default: the user's)")
	fs.StringVar(&o.dashFile, "dashboard-token-file", "", "file holding the token the dashboard (served at / with -listen) requires (else $"+envDashToken+"; with neither, it is open: it is read-only)")
	fs.StringVar(&o.hookFile, "webhook-token-file", "", "file holding the secret of the push webhook POST /hook (else $"+envHookToken+"; with neither, the webhook is off)")
	fs.IntVar(&o.parallelism, "parallelism", 16, "concurrent platform operations")
	o.leader.register(fs)
	fs.DurationVar(&o.claimDuration, "claim-duration", 15*time.Second, "kubernetes backend: how long the claim of the state stays a controller's when it stops renewing it (killed, cut off), "+
		"before another controller takes it over; whole seconds, at least 3s (local and pg free it at once)")
	if _, code, ok := g.parse(fs, args, argSpec{hint: "controller takes no arguments: name the repository with -repo."}); !ok {
		return code
	}
	if o.repo == "" {
		return g.errorf("controller needs -repo: the git repository of the definitions (a URL or a local path)")
	}
	if err := controller.CheckURL(o.repo); err != nil {
		return g.errorf("%v", err)
	}
	if o.interval <= 0 {
		return g.errorf("-interval must be positive (got %s)", o.interval)
	}
	if err := o.leader.check(); err != nil {
		return g.errorf("%v", err)
	}
	if o.claimDuration < 3*time.Second || o.claimDuration%time.Second != 0 {
		return g.errorf("-claim-duration must be whole seconds, at least 3s (got %s): the claim's Lease records it in seconds, and its holder renews it every sixth of it", o.claimDuration)
	}
	policy, err := controller.ParsePolicy(o.policy)
	if err != nil {
		return g.errorf("%v", err)
	}
	wd := o.workDir
	if wd == "" {
		if wd, err = g.workDir(); err != nil {
			return g.errorf("%v", err)
		}
	}
	if wd, err = filepath.Abs(wd); err != nil {
		return g.errorf("%v", err)
	}
	if err := writableDir(wd); err != nil {
		// Before, a file or a read-only directory (a pod without its
		// emptyDir) failed every pass for ever as "git sync failed".
		return g.errorf("-work-dir %s: %v: give a directory the controller may write (it keeps the checkout, the state directory and the approvals there; in a pod, an emptyDir or a volume)", wd, err)
	}
	creds, secrets, err := o.credentials(g)
	if err != nil {
		return g.errorf("%v", err)
	}
	dashToken, err := secretFrom(o.dashFile, g.getenv(envDashToken))
	if err != nil {
		return g.errorf("-dashboard-token-file: %v", err)
	}
	hookToken, err := secretFrom(o.hookFile, g.getenv(envHookToken))
	if err != nil {
		return g.errorf("-webhook-token-file: %v", err)
	}
	repoURL := o.repo
	if !strings.Contains(repoURL, "://") && !strings.Contains(repoURL, "@") {
		if abs, err := filepath.Abs(repoURL); err == nil {
			repoURL = abs
		}
	}
	secrets = append(secrets, urlSecrets(repoURL)...)
	c := &ctrl{
		g: g, o: o, policy: policy,
		log: views.ControllerLog(g.IO.Out),
		src: &controller.Source{
			URL: repoURL, Branch: o.branch, Path: filepath.ToSlash(filepath.Clean(o.path)),
			Dir: filepath.Join(wd, "checkout"), Creds: creds,
		},
		stateDir: filepath.Join(wd, ".trialform"),
		metrics:  controller.NewMetrics(),
		secrets:  append(secrets, dashToken, hookToken), dashToken: dashToken, hookToken: hookToken,
		wake: make(chan struct{}, 1),
		leader: &leaderState{enabled: o.leader.enabled, identity: leaderIdentity(g.getenv),
			lost: make(chan struct{}), started: make(chan struct{}, 1), stopped: make(chan struct{})},
	}
	c.src.Log = c.log
	// A state backend's outage, said in the log's JSON lines (it was a
	// plain "trialform: state backend ..." line on stderr among them).
	g.notice = func(msg string) { c.log.Warn("state backend", "notice", c.redact(msg)) }
	c.metrics.DefinitionsOK.Set(0)
	c.metrics.Leader.Set(0) // 1 once it claims the state (and leads)
	defer func() {
		if c.claim != nil {
			// Given back at once: a standby takes over at its next pass.
			c.claim.Unlock()
		}
		if c.ps != nil {
			c.ps.Close()
		}
		c.mu.Lock()
		if c.dash != nil {
			c.dash.Close()
		}
		c.mu.Unlock()
	}()
	if o.listen != "" {
		ln, err := net.Listen("tcp", o.listen)
		if err != nil {
			return g.errorf("-listen=%s: %v", o.listen, err)
		}
		srv := c.server()
		go srv.Serve(ln)
		defer srv.Close()
		// The address (with the port -listen=:0 picked) for scripts, in
		// the work directory, made first when it is new.
		if err := os.MkdirAll(wd, 0o755); err != nil {
			return g.errorf("-work-dir: %v", err)
		}
		if err := os.WriteFile(filepath.Join(wd, "listen.addr"), []byte(ln.Addr().String()), 0o644); err != nil {
			c.log.Warn("write listen.addr", "error", err.Error())
		}
		c.log.Info("listening", "addr", ln.Addr().String())
	}
	c.log.Info("controller started", "repo", controller.Redact(o.repo, secrets...), "branch", o.branch, "path", o.path, "policy", string(policy), "interval", o.interval.String(), "work_dir", wd, "webhook", hookToken != "", "leader_elect", o.leader.enabled)
	var lost, started <-chan struct{}
	if o.leader.enabled {
		if err := c.startLeaderElection(ctx); err != nil {
			return g.errorf("%v", err)
		}
		defer func() {
			// Give the Lease up before exiting, so that a standby takes
			// over at once.
			c.leader.cancel()
			select {
			case <-c.leader.stopped:
			case <-time.After(o.leader.renewDeadline):
			}
		}()
		lost, started = c.leader.lost, c.leader.started
	}

	for {
		c.pass(ctx)
		wait := o.interval
		if c.failures > 0 {
			wait = c.retryIn()
		}
		t := time.NewTimer(wait)
	wait:
		for {
			select {
			case <-ctx.Done():
				t.Stop()
				c.log.Info("controller stopped", "reason", "interrupt; running trials keep running")
				return 0
			case <-lost:
				t.Stop()
				if ctx.Err() != nil {
					c.log.Info("controller stopped", "reason", "interrupt; running trials keep running")
					return 0
				}
				// Another replica may hold the Lease by now: this one must not
				// apply again. Exit, and let the Deployment start it afresh as
				// a standby.
				c.log.Error("stopped leading; exiting", "lease", c.leader.lease, "identity", c.leader.identity)
				return 1
			case <-started:
			case <-c.wake:
			case <-c.providerChanged():
			case <-c.stateChanges(ctx):
				// Someone wrote the state: a pass only for an approval.
				if !c.approvalArrived(ctx) {
					continue
				}
			case <-t.C:
			}
			break wait
		}
		t.Stop()
	}
}

// stateChanges is the backend's change notifications (pg, kubernetes),
// subscribed to once it is open; nil (never ready) without them.
func (c *ctrl) stateChanges(ctx context.Context) <-chan struct{} {
	if c.changes == nil && c.m != nil {
		c.changes = closedNever
		if n, ok := c.m.(state.ChangeNotifier); ok {
			if ch, err := n.Changes(ctx); err != nil {
				if ctx.Err() != nil {
					// Stopping: the connection was cancelled, the
					// server is not at fault.
					return c.changes
				}
				c.log.Warn("no change notifications from the state backend: approvals are seen at the next pass", "error", c.redact(err.Error()))
			} else {
				c.changes = ch
			}
		}
	}
	return c.changes
}

// writableDir makes dir (and its parents) when missing and checks that a
// file can be written in it.
func writableDir(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".trialform-write-check-*")
	if err != nil {
		return err
	}
	f.Close()
	return os.Remove(f.Name())
}

// closedNever is a channel that never receives.
var closedNever = make(chan struct{})

// approvalArrived reports whether the state, changed by someone since
// the last pass, now approves a held change (read without a lock, in
// the loop's goroutine: the pass is not running).
func (c *ctrl) approvalArrived(ctx context.Context) bool {
	if c.m == nil || c.policy == controller.PlanOnly {
		return false
	}
	if stamp, ok, err := state.StateStampOf(c.m); ok && err == nil {
		if stamp.State == c.passStamp {
			return false
		}
		c.passStamp = stamp.State
	}
	st, err := state.PeekContext(ctx, c.m)
	if err != nil {
		return false
	}
	for name, e := range st.Experiments {
		if e.Pending() {
			c.log.Info("approval arrived", "experiment", name, "spec_hash", e.Approval.SpecHash, "by", e.Approval.By)
			return true
		}
	}
	return false
}

// credentials reads the git credentials; secrets are the strings never to
// print.
func (o *controllerOptions) credentials(g *Globals) (controller.Credentials, []string, error) {
	cr := controller.Credentials{User: o.gitUser, KnownHosts: o.knownHosts}
	tok, err := secretFrom(o.tokenFile, g.getenv(envGitToken))
	if err != nil {
		return cr, nil, fmt.Errorf("-git-token-file: %v", err)
	}
	cr.Token = tok
	if o.sshKeyFile != "" {
		b, err := os.ReadFile(o.sshKeyFile)
		if err != nil {
			return cr, nil, fmt.Errorf("-ssh-key-file: %v", err)
		}
		cr.SSHKey = b
	} else if k := g.getenv(envGitSSHKey); k != "" {
		cr.SSHKey = []byte(k)
	}
	if cr.Token != "" && len(cr.SSHKey) > 0 {
		return cr, nil, fmt.Errorf("both a git token and an SSH key are given: keep the one the -repo URL's scheme uses")
	}
	return cr, []string{tok}, nil
}

// urlSecrets returns the credentials written in a repository URL: the
// password of https://user:TOKEN@host/..., and the user of an http(s)
// URL without one (https://TOKEN@host/..., as GitHub and GitLab take a
// token), so that no log line shows them.
func urlSecrets(repo string) []string {
	u, err := url.Parse(repo)
	if err != nil || u.User == nil {
		return nil
	}
	if p, ok := u.User.Password(); ok {
		return []string{p, url.PathEscape(p), url.QueryEscape(p)}
	}
	if (u.Scheme == "https" || u.Scheme == "http") && u.User.Username() != "" {
		return []string{u.User.Username()}
	}
	return nil
}

func secretFrom(file, env string) (string, error) {
	if file == "" {
		return strings.TrimSpace(env), nil
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(b)), nil
}

// ctrl is one controller's state.
type ctrl struct {
	g        *Globals
	o        controllerOptions
	policy   controller.Policy
	log      *slog.Logger
	src      *controller.Source
	stateDir string
	m        state.Backend
	// mRec is the backend block m was opened with: a later commit whose
	// block differs is not put in force (backendChanged).
	mRec state.BackendRecord

	leader    *leaderState
	hookToken string
	metrics   *controller.Metrics
	secrets   []string
	wake      chan struct{}
	changes   <-chan struct{} // the backend's change notifications
	passStamp string          // the state's stamp after the last pass

	cfg        *schema.Config // last good definitions
	goodCommit string         // their commit
	fetched    string         // the branch head last checked out
	badCommit  string         // a head whose definitions did not load
	ps         *providerSet
	psKey      string
	sourceDown bool
	failures   int // consecutive failed fetches
	lockedMsg  string
	lastPlan   string
	// planSameSaid: the log said that the plan last logged is unchanged.
	planSameSaid bool
	// elsewhereLogged is the unfinished trials of other working copies
	// last logged (logElsewhere).
	elsewhereLogged string

	mu         sync.Mutex // guards ready, held, cfgShared, planShown, syncErr and dash
	syncErr    *ui.SyncErrorJSON
	ready      bool
	held       []controller.Held
	cfgShared  *schema.Config // cfg, for the dashboard
	goodShared string         // goodCommit, for the dashboard
	planShown  *plan.Plan     // the last plan, for the dashboard
	dash       *ui.Server     // the dashboard, once the backend is open
	dashToken  string

	// claim is this controller's claim of the state (state.Claimer),
	// nil while it does not hold it; touched by the loop alone.
	claim *state.Lock
	// claimedBy (guarded by mu) names the claim's holder while another
	// controller holds it ("" otherwise), for /readyz.
	claimedBy   string
	claimLogged string // the holder last logged
	claimWarned bool   // said that the backend cannot be claimed

	// stateErr (guarded by mu) is why the last pass could not load the
	// state ("" when it could): /readyz is not ready meanwhile.
	stateErr string

	// backendMsg (guarded by mu) says, while the branch head's backend
	// block differs from the backend in use, what changed and what to do
	// (for /readyz).
	backendMsg string
}

func (c *ctrl) redact(s string) string { return controller.Redact(s, c.secrets...) }

func (c *ctrl) providerChanged() <-chan struct{} {
	if c.ps == nil {
		return nil
	}
	return c.ps.notify()
}

// retryIn is the wait before the next fetch after c.failures failures:
// doubling from 1s up to -max-backoff.
func (c *ctrl) retryIn() time.Duration {
	return controller.Backoff(c.failures, time.Second, max(c.o.maxBackoff, time.Second))
}

// pass fetches, reloads on a new commit, and reconciles the definitions
// in force. It reports whether the git source was reachable.
func (c *ctrl) pass(ctx context.Context) bool {
	ok := c.syncAndLoad(ctx)
	c.reconcile(ctx)
	return ok
}

// syncAndLoad fetches and, on a new commit, loads its definitions, under
// the checkout's lock (another controller given the same -work-dir
// shares the checkout). It reports whether the git source was reachable.
func (c *ctrl) syncAndLoad(ctx context.Context) bool {
	unlock, err := c.src.Lock(ctx)
	if err != nil {
		if ctx.Err() == nil {
			// As a failed sync: backed off, and said in /metrics and the
			// dashboard (it was logged every -interval, the source "ok").
			c.failures++
			c.metrics.SourceOK.Set(0)
			c.metrics.SyncErrors.WithLabelValues("git").Inc()
			c.syncFailed("git", c.goodCommit, c.redact(err.Error()))
			inForce := c.goodCommit
			if inForce == "" {
				inForce = "none"
			}
			c.log.Error("git sync failed: the checkout cannot be locked", "error", c.redact(err.Error()), "in_force", inForce,
				"attempt", c.failures, "retry_in", c.retryIn().String())
			c.sourceDown = true
		}
		return false
	}
	defer unlock()
	ok := true
	commit, err := c.src.Sync(ctx)
	switch {
	case err != nil && commit == "":
		ok = false
		c.metrics.SourceOK.Set(0)
		c.metrics.SyncErrors.WithLabelValues("git").Inc()
		c.failures++
		c.syncFailed("git", c.goodCommit, c.redact(err.Error()))
		if c.goodCommit == "" {
			// Nothing is in force, so nothing "stays": said so (it
			// said "the last good definitions stay in force" with
			// "in_force":"none yet", or "", which a newcomer read as
			// definitions in force).
			until := "until the repository is read"
			if c.fetched != "" {
				until = "until a commit that validates is fetched"
			}
			c.log.Error("git sync failed; no definitions are in force yet: nothing is planned or applied "+until,
				"error", c.redact(err.Error()), "in_force", "none", "attempt", c.failures, "retry_in", c.retryIn().String())
		} else {
			c.log.Error("git sync failed; the last good definitions stay in force", "error", c.redact(err.Error()), "in_force", c.goodCommit, "attempt", c.failures, "retry_in", c.retryIn().String())
		}
		c.sourceDown = true
	default:
		if c.sourceDown {
			c.log.Info("git source reachable again", "commit", commit, "failed_attempts", c.failures)
			c.sourceDown = false
		}
		c.failures = 0
		c.syncOK("git")
		c.metrics.SourceOK.Set(1)
		c.metrics.SyncedAt.SetToCurrentTime()
		c.metrics.SetCommit(c.metrics.FetchedCommit, commit)
		if commit != c.fetched {
			c.fetched = commit
			c.load(commit, err)
		}
	}
	return ok
}

// load reads the definitions of the commit just checked out; on errors
// the last good ones, if any, stay in force.
func (c *ctrl) load(commit string, syncErr error) {
	dir := c.src.DefinitionsDir()
	var cfg *schema.Config
	var msg string
	if syncErr != nil {
		msg = syncErr.Error()
	} else {
		cfg, msg = c.loadChecked(dir)
	}
	if cfg == nil {
		c.badCommit = commit
		c.metrics.DefinitionsOK.Set(0)
		c.metrics.SyncErrors.WithLabelValues("definitions").Inc()
		// (recorded before the log line: whoever reads the log then
		// finds it in the metrics and the dashboard)
		c.syncFailed("definitions", commit, c.redact(msg))
		if c.cfg == nil {
			// (it said "the last good ones stay in force" though there
			// were none)
			c.log.Error("definitions do not validate; no definitions are in force yet: looking for the newest commit before it that validates",
				"commit", commit, "error", c.redact(msg), "in_force", "none")
			c.loadBeforeBad(commit)
			return
		}
		c.log.Error("definitions do not validate; the last good ones stay in force", "commit", commit, "error", c.redact(msg), "in_force", c.goodCommit)
		return
	}
	if c.backendChanged(commit, cfg) {
		return
	}
	c.putInForce(commit, cfg)
	c.badCommit = ""
	c.syncOK("definitions")
	c.metrics.DefinitionsOK.Set(1)
	c.log.Info("definitions loaded", "commit", commit, "experiments", len(cfg.Experiments))
}

// loadChecked loads the definitions in dir and checks what the
// controller refuses; msg says why cfg is nil.
func (c *ctrl) loadChecked(dir string) (cfg *schema.Config, msg string) {
	cfg, diags := loadDefinitions(c.g, dir, c.src.Dir, c.o.vars)
	if diags.HasErrors() {
		return nil, diagsMessage(diags)
	}
	if msg = c.privateTrialsProblem(cfg); msg != "" {
		return nil, msg
	}
	if msg = c.privateStateProblem(cfg); msg != "" {
		return nil, msg
	}
	if msg = platformIdentityProblem(cfg); msg != "" {
		return nil, msg
	}
	if msg = pgServerProblem(cfg, c.g.getenv); msg != "" {
		return nil, msg
	}
	return cfg, ""
}

func (c *ctrl) putInForce(commit string, cfg *schema.Config) {
	c.cfg, c.goodCommit = cfg, commit
	c.mu.Lock()
	c.cfgShared, c.goodShared = cfg, commit
	c.mu.Unlock()
	c.metrics.SetCommit(c.metrics.SyncedCommit, commit)
	if c.m != nil {
		c.buildProviders()
	}
}

// maxLookBack is how many commits before a head that does not validate a
// controller with no definitions in force (just started) looks through.
const maxLookBack = 50

// loadBeforeBad puts in force, for a controller that has no definitions
// in force yet (it just started: a pod rescheduled, a process killed and
// restarted), the newest of the head's first parents that validates: the
// definitions a controller that had run all along would hold in force.
// Without them it did nothing at all until a good commit came: its
// running trials were not followed nor their results collected. The head
// stays checked out (as for any head that does not validate) and is still
// reported as not valid.
func (c *ctrl) loadBeforeBad(head string) {
	olds, err := c.src.FirstParents(head, maxLookBack)
	defer func() {
		if err := c.src.Checkout(head); err != nil {
			c.log.Error("check out the branch head again", "commit", head, "error", c.redact(err.Error()))
		}
	}()
	for _, old := range olds {
		if err := c.src.Checkout(old); err != nil {
			c.log.Error("check out an earlier commit", "commit", old, "error", c.redact(err.Error()))
			return
		}
		if _, serr := os.Stat(c.src.DefinitionsDir()); serr != nil {
			continue
		}
		cfg, _ := c.loadChecked(c.src.DefinitionsDir())
		if cfg == nil {
			continue
		}
		c.putInForce(old, cfg)
		c.log.Warn("the branch head does not validate; the newest commit before it that does is in force", "commit", head, "in_force", old, "fix", "push a commit that validates")
		return
	}
	msg := fmt.Sprintf("none of the %d commits before it validates either", len(olds))
	if len(olds) == 0 {
		msg = "it is the branch's first commit: there is none before it"
	}
	if err != nil {
		msg = fmt.Sprintf("none of the %d commits read before it validates (%s)", len(olds), c.redact(err.Error()))
	}
	c.log.Error("no definitions in force: nothing is planned or applied until a commit that validates is pushed", "commit", head, "reason", msg)
}

// diagsMessage is diags in one line, as hcl.Diagnostics.Error writes
// them, but a diagnostic without a source range (a -var of an undeclared
// variable) is not prefixed with "<nil>: ".
func diagsMessage(diags hcl.Diagnostics) string {
	one := func(d *hcl.Diagnostic) string {
		if d.Subject == nil {
			return fmt.Sprintf("%s; %s", d.Summary, d.Detail)
		}
		return fmt.Sprintf("%s: %s; %s", d.Subject, d.Summary, d.Detail)
	}
	switch len(diags) {
	case 0:
		return "no diagnostics"
	case 1:
		return one(diags[0])
	}
	return fmt.Sprintf("%s, and %d other diagnostic(s)", one(diags[0]), len(diags)-1)
}

// platformIdentityProblem says which platform blocks of cfg would hand the
// controller's own identity to what a commit chose ("" when none): a
// kubeconfig the commit names (its exec credential plugin runs any
// command in the controller's process, its tokenFile user sends the
// service account's token to any server: `plan` alone ran one), and an
// aml block that authenticates as the controller (DefaultAzureCredential:
// its environment's client secret, its managed identity) against an
// address the commit names (the secret went in the token request to
// authority_host, the token to endpoint). A kubernetes backend block's
// config_path is such a kubeconfig too: the backend is opened from the
// head commit when the controller starts, and its plugin ran then.
func platformIdentityProblem(cfg *schema.Config) string {
	var bad []string
	set := func(p *schema.Platform, name string) bool {
		v, _ := p.Attrs[name].(string)
		return v != ""
	}
	if b := cfg.Backend; b != nil {
		if ks, ok := b.Config.(*k8sstate.Settings); ok && ks.ConfigPath != "" {
			bad = append(bad, fmt.Sprintf("%s: backend \"kubernetes\" sets config_path: under the controller a kubeconfig the repository names could run a command in the controller (an exec credential plugin) or send its service account's token elsewhere; remove config_path: the controller reaches Kubernetes with its own service account (in a pod, in_cluster = true) or $KUBECONFIG", b.DeclRange.String()))
		}
	}
	for _, key := range sortedKeys(cfg.Platforms) {
		p := cfg.Platforms[key]
		if set(p, "kubeconfig") {
			bad = append(bad, fmt.Sprintf("%s: platform %q %q names a kubeconfig: under the controller a kubeconfig from the repository could run a command in the controller (an exec credential plugin) or send its service account's token elsewhere; remove kubeconfig: the controller reaches Kubernetes with its own service account (in a pod) or $KUBECONFIG", p.DeclRange.String(), p.Kind, p.Name))
		}
		if p.Kind == "aml" && !set(p, "client_secret") {
			for _, a := range []string{"authority_host", "endpoint", "artifact_endpoint"} {
				if set(p, a) {
					bad = append(bad, fmt.Sprintf("%s: platform \"aml\" %q sets %s without client_secret: under the controller DefaultAzureCredential is the controller's own identity (its AZURE_CLIENT_SECRET, its managed identity), which would be sent to an address the repository names; remove %s, or give client_secret through a sensitive variable", p.DeclRange.String(), p.Name, a, a))
					break
				}
			}
		}
	}
	return strings.Join(bad, "; ")
}

// pgServerProblem says ("" when none) that cfg's backend "pg" block names
// another server than the controller's environment, which holds
// PGPASSWORD (the password docs/backends.md keeps from committers so):
// the controller sent it to the server the commit named.
func pgServerProblem(cfg *schema.Config, getenv func(string) string) string {
	b := cfg.Backend
	if b == nil {
		return ""
	}
	ps, ok := b.Config.(*pgstate.Settings)
	if !ok {
		return ""
	}
	foreign, own := pgstate.ForeignServers(ps.ConnStr, backendreg.Env{Getenv: getenv})
	if len(foreign) == 0 {
		return ""
	}
	return fmt.Sprintf("%s: backend \"pg\" names the server %s, not the one of the controller's environment (%s), which holds PGPASSWORD: under the controller the password would go to whatever server a commit names; "+
		"name the server with PGHOST and PGPORT beside PGPASSWORD and leave host and port out of conn_str (or name the same one)", b.DeclRange.String(), strings.Join(foreign, ", "), strings.Join(own, ", "))
}

// loadDefinitions loads the definitions in dir, of the checkout in root:
// no file they read may lie outside it. Their files are named by their
// path in the repository ("experiments/main.hcl" with -path experiments),
// where whoever reads the log or /readyz looks for them.
func loadDefinitions(g *Globals, dir, root string, v varFlags) (*schema.Config, hcl.Diagnostics) {
	prefix := ""
	if rel, err := filepath.Rel(root, dir); err == nil && rel != "." {
		prefix = filepath.ToSlash(rel)
	}
	cfg, diags := schema.Load(dir, schema.LoadOptions{Platforms: platformRegistry, Tuners: tunerRegistry, Backends: schemaBackends(), Vars: v.vars, VarFiles: v.varFiles, Environ: g.IO.Environ, Within: root, FilePrefix: prefix})
	return cfg, diags
}

// openBackend opens the configured backend with the state directory in
// the work directory (not in the checkout, which each commit replaces).
func (c *ctrl) openBackend(cfg *schema.Config) bool {
	c.g.stateDirAt = c.stateDir
	if err := os.MkdirAll(c.stateDir, 0o755); err != nil {
		c.log.Error("state directory", "error", err.Error())
		return false
	}
	// A fresh work directory is initialized with the definitions'
	// backend, as `trialform init` would; a work directory with a local
	// state or another recorded backend is left to `init` (the open
	// below says so).
	if rec, err := state.RecordedBackend(c.stateDir); err == nil && rec == nil && cfg.Backend != nil {
		// (a local state there is asked through the contract, which alone
		// knows its files)
		if exists, err := state.Open(c.stateDir).Exists(); err == nil && !exists {
			if err := state.RecordBackend(c.stateDir, backendRecordOf(cfg.Backend)); err != nil {
				c.log.Error("record the state backend", "error", err.Error())
				return false
			}
		}
	}
	errBuf := &bytes.Buffer{}
	saved := c.g.IO.Err
	c.g.IO.Err = errBuf
	_, m, ok := c.g.openBackendWith(cfg, &c.o.vars)
	c.g.IO.Err = saved
	if !ok {
		c.log.Error("open the state backend", "error", c.redact(strings.TrimSpace(errBuf.String())))
		return false
	}
	c.m, c.mRec = m, backendRecordOf(cfg.Backend)
	if cd, ok := m.(interface{ SetClaimDuration(time.Duration) }); ok {
		cd.SetClaimDuration(c.o.claimDuration)
	}
	c.log.Info("state backend open", "backend", m.Name())
	if m.Name() == schema.LocalBackendKind.Name && incluster.Possible() {
		// A newcomer's definitions without a backend block, run in a pod
		// as examples/controller does (-work-dir an emptyDir): said
		// nothing, and the state was lost at the pod's next restart.
		c.log.Warn("the state is in the local backend, in -work-dir: in a pod it lasts as long as that directory (an emptyDir is lost when the pod is deleted, evicted or rescheduled, and every experiment then starts anew)",
			"state_dir", c.stateDir, "what_to_do", `give the definitions a backend "kubernetes" block (or "pg"), or put -work-dir on a persistent volume`)
	}
	if c.o.listen != "" {
		dash := ui.New(ui.Options{
			StateDir: c.stateDir, WorkDir: c.src.DefinitionsDir(), Token: c.dashToken, Backend: m,
			Config: func() *schema.Config {
				c.mu.Lock()
				defer c.mu.Unlock()
				return c.cfgShared
			},
			Plan:       c.dashboardPlan,
			Controller: c.controllerStatus,
		})
		c.mu.Lock()
		c.dash = dash
		c.mu.Unlock()
	}
	return true
}

func (c *ctrl) buildProviders() {
	c.ps, c.psKey = reuseProviders(c.ps, c.psKey, c.cfg, c.stateDir)
}

// reconcile plans the definitions in force and applies what the policy
// allows, holding the experiments whose change is destructive.
func (c *ctrl) reconcile(ctx context.Context) {
	if c.cfg == nil || ctx.Err() != nil {
		return
	}
	lctx := c.leader.leaderCtx(ctx)
	if lctx == nil {
		c.standby(ctx)
		return
	}
	ctx = lctx
	if c.m == nil {
		// The backend could not be opened yet (a server down at start):
		// tried again at each pass.
		if !c.openBackend(c.cfg) {
			c.metrics.SyncErrors.WithLabelValues("lock").Inc()
			return
		}
	}
	// A plan-only controller is a preview, like `trialform plan`: it
	// takes no claim (a preview started first would keep the acting
	// controller standing by for ever), no lock, and writes nothing.
	planOnly := c.policy == controller.PlanOnly
	if !planOnly && !c.holdClaim(ctx) {
		c.standby(ctx)
		return
	}
	if c.ps == nil {
		c.buildProviders()
	}
	op := c.leader.lockOperation()
	var names []string
	if _, ok := c.m.(state.ExperimentLocker); ok && !planOnly {
		if st, err := state.PeekContext(ctx, c.m); err == nil {
			names = lockScope(c.cfg, st, nil)
		}
	}
	if len(names) > 0 {
		// A new shared state is created under the whole-state lock first
		// (as apply does), so a laptop starting at once does not make a
		// state of another lineage.
		err := ensureState(ctx, c.m, op, c.o.lock)
		if err != nil && c.takeOverLock(ctx, err) {
			err = ensureState(ctx, c.m, op, c.o.lock)
		}
		if err != nil {
			c.metrics.SyncErrors.WithLabelValues("lock").Inc()
			c.syncFailed("lock", c.goodCommit, c.redact(err.Error()))
			c.log.Error("create the state", "error", c.redact(err.Error()))
			return
		}
	}
	var lk *state.Lock
	var err error
	if !planOnly {
		lk, err = state.LockScope(ctx, c.m, names, op, Version, c.o.lock.timeout)
	}
	if err != nil && c.takeOverLock(ctx, err) {
		lk, err = state.LockScope(ctx, c.m, names, op, Version, c.o.lock.timeout)
	}
	if err != nil && ctx.Err() != nil {
		// Stopping (an interrupt, SIGTERM, the end of a term) while
		// waiting for someone's lock: not a failure, and nothing for
		// the holder to do (it said "retrying at the next pass" and
		// "force-unlock" as the controller exited).
		c.log.Info("stopped waiting for the state lock: the controller is stopping")
		return
	}
	if err != nil {
		c.metrics.SyncErrors.WithLabelValues("lock").Inc()
		c.syncFailed("lock", c.goodCommit, c.redact(err.Error()))
		var le *state.LockedError
		if errors.As(err, &le) {
			// Said once per holder: the message changes every pass (a
			// stale lock's age).
			if key := le.Info.ID + " " + le.Info.Who; key != c.lockedMsg {
				c.lockedMsg = key
				c.log.Warn("state is locked; retrying at the next pass", "error", err.Error(), "lock_id", le.Info.ID)
			}
			return
		}
		c.log.Error("acquire the state lock", "error", c.redact(err.Error()))
		return
	}
	if lk != nil {
		defer lk.Unlock()
	}
	c.lockedMsg = ""
	st, err := state.LoadContext(ctx, c.m)
	if err == nil {
		err = lostError(ctx, c.m, c.stateDir, nil, nil)
	}
	if err != nil && ctx.Err() != nil {
		// Stopping while the backend did not answer: nothing was
		// written, and the next start reads the state again.
		c.log.Info("stopped reading the state: the controller is stopping")
		return
	}
	if err != nil {
		// A state lost or unreadable: not ready, and said in the
		// dashboard and the metrics, not only in the log.
		c.metrics.SyncErrors.WithLabelValues("state").Inc()
		c.syncFailed("state", c.goodCommit, c.redact(err.Error()))
		c.mu.Lock()
		c.stateErr = c.redact(err.Error())
		c.mu.Unlock()
		c.log.Error("load the state", "error", c.redact(err.Error()))
		return
	}
	c.syncOK("state", "lock")
	c.mu.Lock()
	c.stateErr = ""
	c.mu.Unlock()
	var store apply.StateStore = c.m
	if planOnly {
		store = newMemStore(c.m) // what the refresh finds is not kept
	}
	s := apply.NewSession(c.cfg, st, store, c.ps)
	s.PlanOnly = planOnly
	s.Provenance = c.provenance()
	s.Parallelism = c.o.parallelism
	s.Hard = c.g.hard(ctx)
	s.Hooks = views.ApplyLog{Log: c.log}
	t0 := time.Now()
	p, err := s.Plan(ctx, plan.Options{})
	controller.Since(c.metrics.PlanSeconds, t0)
	if err != nil {
		c.metrics.SyncErrors.WithLabelValues("plan").Inc()
		c.log.Error("plan failed", "error", c.redact(err.Error()))
		c.syncFailed("plan", c.goodCommit, c.redact(err.Error()))
		return
	}
	c.syncOK("plan", "lock")
	c.mu.Lock()
	c.planShown = p
	c.mu.Unlock()
	defer c.noteStamp()
	destructive := controller.Destructive(p)
	approved, held := controller.Split(p, st)
	if c.policy == controller.PlanOnly {
		held, approved = destructive, nil
	} else if !c.mayWrite() || !c.recordHolds(s, destructive) {
		return
	}
	c.setHeld(held)
	c.metrics.SetPlan(p.Summary, time.Now())
	// A plan is logged at INFO when it differs from the last pass's (its
	// commit, summary or held changes), or has changes this pass
	// applies; a plan that applies nothing (its only changes held ones,
	// the same every pass until approved; any plan of -policy plan-only)
	// once, then, said once to be unchanged, at DEBUG (a plan without
	// changes is not said to be unchanged; /metrics keeps
	// its numbers: trialform_plan_changes). Before, a plan-only
	// controller logged the same plan at INFO every pass.
	level := slog.LevelDebug
	applies := p.HasChanges() && len(held) == 0 && c.policy != controller.PlanOnly
	if key := c.goodCommit + " " + planLogKey(p, held); key != c.lastPlan || applies {
		level = slog.LevelInfo
		c.lastPlan, c.planSameSaid = key, false
	}
	c.log.Log(ctx, level, "planned", "commit", c.goodCommit, "create", p.Summary.Create, "resume", p.Summary.Resume, "teardown", p.Summary.Teardown, "update", p.Summary.Update, "policy", string(c.policy))
	if level == slog.LevelDebug && p.HasChanges() && !c.planSameSaid {
		// (a plan without changes goes without saying)
		c.planSameSaid = true
		c.log.Info("the plan is unchanged: logged again when it changes", "commit", c.goodCommit, "policy", string(c.policy), "see", "trialform_plan_changes in /metrics")
	}
	c.logElsewhere(ctx, p)
	if c.policy == controller.PlanOnly {
		c.setReady(s)
		return
	}
	if targets := controller.Targets(p, held); targets != nil {
		if len(targets) == 0 {
			c.setReady(s)
			return
		}
		if p, err = s.Plan(ctx, plan.Options{Targets: targets}); err != nil {
			c.metrics.SyncErrors.WithLabelValues("plan").Inc()
			c.log.Error("plan failed", "error", c.redact(err.Error()))
			return
		}
	}
	if p.HasChanges() {
		for _, a := range approved {
			e := st.Experiment(a.Experiment)
			c.log.Info("applying an approved change", "experiment", a.Experiment, "spec_hash", a.SpecHash, "generation", a.Generation, "removed", a.Removed, "teardowns", a.Teardowns, "approved_by", e.Approval.By)
		}
		if !c.mayWrite() {
			// Paused past the term (the watchdog has not run yet): another
			// replica may lead; or the claim of the state was lost.
			return
		}
		t0 := time.Now()
		err := s.Apply(ctx, p)
		controller.Since(c.metrics.ApplySeconds, t0)
		if err != nil && ctx.Err() == nil {
			c.metrics.SyncErrors.WithLabelValues("apply").Inc()
			var msgs []string
			for _, e := range applyErrors(err) {
				if !c.conflicted(e) {
					c.log.Error("apply failed", "error", c.redact(e.Error()), "commit", c.goodCommit)
				}
				msgs = append(msgs, c.redact(state.AdviseConflict(e, views.ConflictRetry)))
			}
			c.syncFailed("apply", c.goodCommit, strings.Join(msgs, "\n"))
		} else if err == nil {
			c.syncOK("apply")
			c.log.Info("applied", "create", p.Summary.Create, "resume", p.Summary.Resume, "teardown", p.Summary.Teardown, "update", p.Summary.Update)
			if len(approved) > 0 {
				// Applied: the approved changes are no longer held.
				c.metrics.ApprovalsTotal.Add(float64(len(approved)))
				c.recordHolds(s, held)
				for _, a := range approved {
					c.log.Info("approved change applied", "experiment", a.Experiment, "spec_hash", a.SpecHash)
				}
			}
		}
	}
	c.setReady(s)
}

// planLogKey identifies a plan's summary and its held changes, for
// logging a plan once while it stays the same.
// logElsewhere says, at WARN once per set of trials, which unfinished
// trials of the state another working copy owns (the local platform of
// another work directory: a controller that held the claim before this
// one, stopped or killed while its trials ran, or a laptop). The plan
// leaves them to their owner: this controller neither reads nor resumes
// them, and they stay unfinished in the state, counting toward
// concurrency and max_trials, until their owner reads them. Before, the
// controller said nothing, and an experiment so left never finished.
func (c *ctrl) logElsewhere(ctx context.Context, p *plan.Plan) {
	var key []string
	for _, ep := range p.Experiments {
		if len(ep.Elsewhere) > 0 {
			key = append(key, ep.Name+": "+plan.DescribeElsewhere(ep.Elsewhere))
		}
	}
	k := strings.Join(key, "; ")
	if k == c.elsewhereLogged {
		return
	}
	c.elsewhereLogged = k
	for _, ep := range p.Experiments {
		if len(ep.Elsewhere) == 0 {
			continue
		}
		c.log.Log(ctx, slog.LevelWarn, "unfinished trials of another working copy are left to it: this controller does not observe them",
			"experiment", ep.Name, "trials", plan.DescribeElsewhere(ep.Elsewhere),
			"what_to_do", "they stay unfinished in the state (counted toward concurrency and max_trials) until their working copy reads them: "+
				"if it is the work directory of a controller that held the claim before this one, stop this controller and start that one again with its -work-dir (it collects them); "+
				"if it is gone for good, `trialform apply -take-over` in a working copy sharing the state resumes them there")
	}
}

func planLogKey(p *plan.Plan, held []controller.Held) string {
	key := fmt.Sprintf("%+v", p.Summary)
	for _, h := range held {
		key += " " + h.Experiment + "@" + h.Key()
	}
	return key
}

// recordHolds writes the holds (and drops the approvals of changes no
// longer held) into the state, under the pass's lock, so that people
// sharing the backend see and approve them (state.Hold). It reports
// whether the pass may go on.
func (c *ctrl) recordHolds(s *apply.Session, holds []controller.Held) bool {
	var stale []string
	now := time.Now().UTC().Truncate(time.Second)
	err := s.ChangeExperiments(func(st *state.State) {
		_, stale = controller.RecordHolds(st, holds, "controller "+c.leader.identity, c.goodCommit, now)
	})
	for _, name := range stale {
		c.log.Warn("an approval named an earlier change; the new change is held again", "experiment", name)
	}
	if err != nil {
		c.metrics.SyncErrors.WithLabelValues("apply").Inc()
		if !c.conflicted(err) {
			c.log.Error("record the held changes in the state", "error", c.redact(err.Error()))
		}
		return false
	}
	return true
}

// conflicted reports whether err is a save refused because someone else
// wrote the state since this pass loaded it (a person's apply with
// -lock=false, a state push, a force-unlocked lock's holder), and says so
// once, at WARN, with what happens next: nothing is lost, the next pass
// loads the state again and plans from what is there.
func (c *ctrl) conflicted(err error) bool {
	var ce *state.ConflictError
	if !errors.As(err, &ce) {
		return false
	}
	c.log.Warn("the state was changed by someone else during this pass: this controller loads it again and retries at its next pass",
		"error", c.redact(state.AdviseConflict(err, views.ConflictRetry)), "commit", c.goodCommit, "retry_in", c.o.interval.String(),
		"what_to_do", "nothing if the next pass succeeds; if this repeats, find what writes the state beside the controller (an apply with -lock=false, a state push)")
	return true
}

// syncFailed records a failed sync for the dashboard and the metrics
// (the log line is the caller's).
func (c *ctrl) syncFailed(stage, commit, msg string) {
	now := time.Now().UTC()
	c.metrics.SetLastSyncError(stage, commit, now)
	c.mu.Lock()
	c.syncErr = &ui.SyncErrorJSON{Stage: stage, Commit: commit, Message: msg, At: now}
	c.mu.Unlock()
}

// syncOK clears the last failed sync when a later sync of its stage
// succeeded.
func (c *ctrl) syncOK(stages ...string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, st := range stages {
		c.metrics.ClearLastSyncError(st)
		if c.syncErr != nil && c.syncErr.Stage == st {
			c.syncErr = nil
		}
	}
}

// controllerStatus is the dashboard's view of the controller.
func (c *ctrl) controllerStatus() ui.ControllerJSON {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := ui.ControllerJSON{Commit: c.goodShared}
	if c.syncErr != nil {
		e := *c.syncErr
		out.SyncError = &e
	}
	return out
}

// noteStamp remembers the state's stamp after a pass: a change
// notification that finds it unchanged was the pass's own write.
func (c *ctrl) noteStamp() {
	if stamp, ok, err := state.StateStampOf(c.m); ok && err == nil {
		c.passStamp = stamp.State
	}
}

// provenance is the git provenance of the definitions in force: their
// commit, even while the checkout holds a later commit that did not load.
// It is never dirty: each pass's sync writes the commit's files again
// (the definitions and every code_dir are in the checkout), and the other
// files there are what trials wrote in their working directory (a data
// set, __pycache__), which made every later trial's provenance dirty.
func (c *ctrl) provenance() map[string]state.Provenance {
	pv := c.g.readProvenance(c.cfg, c.stateDir).byExp
	for name, p := range pv {
		p.Dirty, p.CodeDirty = false, false
		if p.Commit == c.fetched && c.fetched != c.goodCommit {
			p.Commit = c.goodCommit
			if p.CodeCommit == c.fetched {
				p.CodeCommit = c.goodCommit
			}
		}
		pv[name] = p
	}
	return pv
}

func (c *ctrl) setHeld(held []controller.Held) {
	c.metrics.SetHeld(held)
	c.mu.Lock()
	prev := c.held
	c.held = held
	c.mu.Unlock()
	prevKeys := map[string]bool{}
	for _, h := range prev {
		prevKeys[h.Experiment+" "+h.Key()] = true
	}
	for _, h := range held {
		if !prevKeys[h.Experiment+" "+h.Key()] {
			c.log.Warn("held: destructive change waits for approval", "experiment", h.Experiment, "spec_hash", h.SpecHash, "generation", h.Generation, "removed", h.Removed, "teardowns", h.Teardowns, "reasons", strings.Join(h.Reasons, "; "), "approve", "trialform approve "+h.Experiment)
		}
	}
}

func (c *ctrl) setReady(s *apply.Session) {
	c.metrics.SetTrials(trialCounts(s.State()))
	c.mu.Lock()
	c.ready = true
	c.mu.Unlock()
}

func trialCounts(st *state.State) map[string]map[string]int {
	counts := map[string]map[string]int{}
	for name, e := range st.Experiments {
		byStatus := map[string]int{}
		for _, t := range e.Trials {
			byStatus[string(t.Status)]++
		}
		counts[name] = byStatus
	}
	return counts
}

// standby is a pass of a replica that does not lead: the definitions are
// followed and the backend opened (for the dashboard and the metrics),
// nothing is planned or applied.
func (c *ctrl) standby(ctx context.Context) {
	if c.m == nil && !c.openBackend(c.cfg) {
		return
	}
	// Given up when the controller stops: a standby whose backend cannot
	// be reached (its apiserver down) retried for 2 minutes, and a pod
	// outlived its grace period, SIGKILLed.
	if st, err := state.PeekContext(ctx, c.m); err == nil {
		c.metrics.SetTrials(trialCounts(st))
	}
	c.mu.Lock()
	c.ready = true
	c.mu.Unlock()
}

// server is the controller's HTTP server: the dashboard's limits (at most
// 256 connections, the one idle longest closed past that; a keep-alive
// connection idle 15 s closed; a request read within 30 s), as /hook and
// the dashboard may face the internet. A plain http.Server kept every idle
// keep-alive connection for ever: 1,500 clients that each asked /healthz
// once held 1,500 file descriptors, and more would exhaust the pod.
func (c *ctrl) server() *http.Server { return ui.HTTPServer(c.handler(), ui.Limits{}) }

func (c *ctrl) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok\n")) })
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, r *http.Request) {
		c.mu.Lock()
		ready, backendMsg, stateErr, syncErr := c.ready, c.backendMsg, c.stateErr, c.syncErr
		c.mu.Unlock()
		if !ready {
			// Why, when a sync failed: a probe's failure (kubectl
			// describe) then says what to fix, not only "not ready".
			msg := "not ready: no successful sync and plan yet"
			if syncErr != nil {
				msg += fmt.Sprintf("; last failure (%s", syncErr.Stage)
				if syncErr.Commit != "" {
					msg += ", commit " + short(syncErr.Commit)
				}
				if c.dashToken != "" {
					// The message (a commit's diagnostics) is the
					// dashboard's, which a token guards: not here.
					msg += "): see the log or the dashboard"
				} else {
					msg += "): " + syncErr.Message
				}
			}
			http.Error(w, msg, http.StatusServiceUnavailable)
			return
		}
		if stateErr != "" {
			http.Error(w, "not ready: the state cannot be loaded: "+stateErr, http.StatusServiceUnavailable)
			return
		}
		if st := c.status(); st != "" {
			w.Write([]byte("ready (" + st + ")\n"))
		} else {
			w.Write([]byte("ready\n"))
		}
		// Still ready (the last good definitions are applied, the
		// dashboard serves), but a person must act.
		if backendMsg != "" {
			w.Write([]byte("restart needed: " + backendMsg + "\n"))
		}
	})
	mux.Handle("/metrics", c.metrics.Handler())
	mux.HandleFunc("/held", func(w http.ResponseWriter, r *http.Request) {
		c.mu.Lock()
		held := append([]controller.Held{}, c.held...)
		c.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(held)
	})
	mux.HandleFunc("/hook", c.serveHook)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		c.mu.Lock()
		dash := c.dash
		c.mu.Unlock()
		if dash == nil {
			http.Error(w, "the dashboard starts once the state backend is open (after the first good commit)", http.StatusServiceUnavailable)
			return
		}
		dash.ServeHTTP(w, r)
	})
	return mux
}

// dashboardPlan is the controller's last plan, as plan prints it, for
// the dashboard's plan view.
func (c *ctrl) dashboardPlan(ctx context.Context) (string, error) {
	c.mu.Lock()
	p := c.planShown
	c.mu.Unlock()
	if p == nil {
		return "", errors.New("the controller has not planned yet")
	}
	var b bytes.Buffer
	views.Plan(&b, p, views.Colors{})
	return b.String(), nil
}
