package command

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/trialform/trialform/internal/incluster"
	"github.com/trialform/trialform/internal/procfs"

	"github.com/trialform/trialform/controller/election"
	"github.com/trialform/trialform/providers"
	"github.com/trialform/trialform/schema"
	"github.com/trialform/trialform/state"
	k8sstate "github.com/trialform/trialform/state/kubernetes"
)

// Leader election among the replicas of one controller (issue 27, HA):
// controller/election on a coordination.k8s.io/v1 Lease (client-go's
// algorithm and Lease fields; see that package for why not client-go's
// package itself). Only the
// leader plans and applies; a standby follows the branch and serves the
// health checks, the metrics and the dashboard, so that taking over
// costs a plan, not a clone.

type leaderOptions struct {
	enabled       bool
	namespace     string
	name          string
	leaseDuration time.Duration
	renewDeadline time.Duration
	retryPeriod   time.Duration
}

func (o *leaderOptions) register(fs interface {
	BoolVar(*bool, string, bool, string)
	StringVar(*string, string, string, string)
	DurationVar(*time.Duration, string, time.Duration, string)
}) {
	fs.BoolVar(&o.enabled, "leader-elect", false, "run as one of several replicas: only the holder of a Lease plans and applies (the others stand by); needs a Kubernetes API (in a pod, or $KUBECONFIG)")
	fs.StringVar(&o.namespace, "leader-elect-namespace", "", "namespace of the leader Lease (default: the pod's namespace, else the kubeconfig's)")
	fs.StringVar(&o.name, "leader-elect-name", "trialform-controller", "name of the leader Lease: the replicas of one controller share it")
	fs.DurationVar(&o.leaseDuration, "leader-elect-lease-duration", 15*time.Second, "how long a standby waits after the leader's last renewal before it takes over")
	fs.DurationVar(&o.renewDeadline, "leader-elect-renew-deadline", 10*time.Second, "how long the leader tries to renew before it stops leading (less than the lease duration)")
	fs.DurationVar(&o.retryPeriod, "leader-elect-retry-period", 2*time.Second, "time between tries to acquire or renew the Lease")
}

func (o *leaderOptions) check() error {
	if !o.enabled {
		return nil
	}
	if o.name == "" {
		return errors.New("-leader-elect-name must not be empty")
	}
	if o.leaseDuration < time.Second {
		return fmt.Errorf("-leader-elect-lease-duration (%s) must be at least 1s", o.leaseDuration)
	}
	if !(o.leaseDuration > o.renewDeadline && float64(o.renewDeadline) > election.JitterFactor*float64(o.retryPeriod) && o.retryPeriod > 0) {
		return fmt.Errorf("leader election needs -leader-elect-lease-duration (%s) > -leader-elect-renew-deadline (%s) > %.1f × -leader-elect-retry-period (%s)",
			o.leaseDuration, o.renewDeadline, election.JitterFactor, o.retryPeriod)
	}
	return nil
}

// leaderState is what the loop and the HTTP handlers know of the
// election.
type leaderState struct {
	mu       sync.Mutex
	enabled  bool
	identity string
	lease    string             // namespace/name
	leading  context.Context    // the leader's context while leading, else nil
	leader   string             // the current leader's identity, as last seen
	lost     chan struct{}      // closed when this replica stops leading
	started  chan struct{}      // receives when this replica starts leading
	since    time.Time          // when it started leading
	cancel   context.CancelFunc // stops the elector
	stopped  chan struct{}      // closed when the elector returned (the Lease given up)
	el       *election.Elector
}

// leaderCtx is the context to plan and apply under: ctx without leader
// election, the leader's context while leading, nil on a standby.
func (l *leaderState) leaderCtx(ctx context.Context) context.Context {
	if l == nil || !l.enabled {
		return ctx
	}
	l.mu.Lock()
	leading, el := l.leading, l.el
	l.mu.Unlock()
	if leading == nil || el == nil || !el.Leading() {
		return nil
	}
	return leading
}

// stillLeading reports, right before a write, whether this replica may
// write: always without leader election; else whether it leads now (its
// renew deadline, on the wall clock, has not passed since its last
// renewal: a leader paused past it has lost, whatever its goroutines
// have seen yet).
func (l *leaderState) stillLeading() bool {
	if l == nil || !l.enabled {
		return true
	}
	l.mu.Lock()
	el := l.el
	l.mu.Unlock()
	return el != nil && el.Leading()
}

// status is "leader", or "standby (leader: ID)".
func (l *leaderState) status() string {
	if l == nil || !l.enabled {
		return ""
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.leading != nil {
		return "leader"
	}
	if l.leader == "" {
		return "standby (no leader yet)"
	}
	return "standby (leader: " + l.leader + ")"
}

// lockOperation is the operation the controller's state locks carry:
// with leader election it names the Lease and this replica, so that a
// new leader knows the locks of a former leader of the same election
// (and breaks them, once it has confirmed it holds the Lease: a former
// leader's term is over, and it checks its term before each write).
func (l *leaderState) lockOperation() string {
	if l == nil || !l.enabled {
		return "controller"
	}
	return "controller (leader of " + l.lease + ", " + l.identity + ")"
}

// leaderIdentity is the Pod's name ($POD_NAME, from the downward API) or
// host_pid.
func leaderIdentity(getenv func(string) string) string {
	if p := getenv("POD_NAME"); p != "" {
		return p
	}
	h, err := os.Hostname()
	if err != nil || h == "" {
		h = "localhost"
	}
	return fmt.Sprintf("%s_%d", h, os.Getpid())
}

// startLeaderElection starts the elector; it runs until ctx ends.
func (c *ctrl) startLeaderElection(ctx context.Context) error {
	o := c.o.leader
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if kc := c.g.getenv("KUBECONFIG"); kc != "" {
		rules.Precedence = strings.Split(kc, string(os.PathListSeparator))
	}
	cc := incluster.ClientConfig(clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}))
	cfg, err := cc.ClientConfig()
	if err != nil {
		return fmt.Errorf("-leader-elect needs a Kubernetes API (run in a pod, or set $KUBECONFIG): %s", k8sstate.KubeconfigProblem(err))
	}
	ns := o.namespace
	if ns == "" {
		if n, _, err := cc.Namespace(); err == nil && n != "" {
			ns = n
		} else {
			ns = "default"
		}
	}
	l := c.leader
	l.lease = ns + "/" + o.name
	ectx, cancel := context.WithCancel(ctx)
	l.cancel = cancel
	el, err := election.New(election.Config{
		Rest: cfg, Namespace: ns, Name: o.name, Identity: l.identity,
		LeaseDuration: o.leaseDuration, RenewDeadline: o.renewDeadline, RetryPeriod: o.retryPeriod,
		OnStartedLeading: func(lctx context.Context) {
			l.mu.Lock()
			l.leading, l.since = lctx, time.Now()
			l.mu.Unlock()
			c.metrics.Leader.Set(1)
			c.log.Info("started leading", "lease", l.lease, "identity", l.identity)
			select {
			case l.started <- struct{}{}:
			default:
			}
		},
		OnStoppedLeading: func() {
			l.mu.Lock()
			was := l.leading != nil
			l.leading = nil
			l.mu.Unlock()
			c.metrics.Leader.Set(0)
			if was {
				close(l.lost)
			}
		},
		OnNewLeader: func(id string) {
			l.mu.Lock()
			l.leader = id
			l.mu.Unlock()
			if id != l.identity {
				c.log.Info("standing by", "lease", l.lease, "leader", id, "identity", l.identity)
			}
		},
	})
	if err != nil {
		cancel()
		return fmt.Errorf("-leader-elect: %v", err)
	}
	l.mu.Lock()
	l.el = el
	l.mu.Unlock()
	go func() {
		el.Run(ectx)
		close(l.stopped)
	}()
	return nil
}

// takeOverLock breaks a state lock that a former leader of this
// controller's election holds (it was killed in the middle of a pass, or
// paused past its term): only while this replica leads, as confirmed by
// reading the Lease now, so never the lock of the current leader. It
// reports whether it broke one.
func (c *ctrl) takeOverLock(ctx context.Context, err error) bool {
	var le *state.LockedError
	if !errors.As(err, &le) || le.Info.ID == "" {
		return false
	}
	if c.leader == nil || !c.leader.enabled {
		what := formerControllerLock(err, le.Info, os.Getpid(), state.Who(), pidAlive)
		if what == "" {
			return false
		}
		if ferr := c.m.ForceUnlock(le.Info.ID); ferr != nil {
			c.log.Error("break the lock of "+what, "lock_id", le.Info.ID, "error", c.redact(ferr.Error()))
			return false
		}
		c.log.Warn("broke the state lock of "+what, "lock_id", le.Info.ID, "holder", le.Info.Who, "pid", le.Info.PID, "since", le.Info.Created, "experiments", le.Info.Experiments)
		return true
	}
	l := c.leader
	// "controller (leader of NS/NAME, ID)", or "controller (leader of
	// NS/NAME)" from a version that did not name the replica.
	rest, ok := strings.CutPrefix(le.Info.Operation, "controller (leader of "+l.lease)
	if !ok || (rest != ")" && !strings.HasPrefix(rest, ", ")) {
		return false
	}
	l.mu.Lock()
	el, since := l.el, l.since
	l.mu.Unlock()
	if holder := strings.TrimSuffix(strings.TrimPrefix(rest, ", "), ")"); holder == l.identity && !le.Info.Created.Before(since) {
		return false // this term's own lock
	}
	if el == nil || !el.Confirm(ctx) {
		return false
	}
	if ferr := c.m.ForceUnlock(le.Info.ID); ferr != nil {
		c.log.Error("break the lock of a former leader", "lock_id", le.Info.ID, "error", c.redact(ferr.Error()))
		return false
	}
	c.log.Warn("broke the state lock of a former leader", "lock_id", le.Info.ID, "operation", le.Info.Operation, "holder", le.Info.Who, "pid", le.Info.PID, "since", le.Info.Created, "experiments", le.Info.Experiments)
	return true
}

// formerControllerLock says whose lock info is when a controller without
// leader election may break it ("" when it may not): a lock of a
// controller ("controller") held by a former process of this one (the
// same user@host, and a pid that is gone or is this process's own: a
// container restarted in its pod is pid 1 again), or whose Lease its
// holder stopped renewing for longer than its duration (a controller
// killed with SIGKILL whose pod was replaced).
func formerControllerLock(err error, info state.LockInfo, pid int, who string, alive func(int) bool) string {
	if info.Operation != "controller" {
		return ""
	}
	if info.Who == who && (info.PID == pid || !alive(info.PID)) {
		return "a former process of this controller"
	}
	var se *k8sstate.StaleLockError
	if errors.As(err, &se) {
		return "a controller that stopped renewing it"
	}
	return ""
}

// pidAlive reports whether process pid runs (not a zombie).
func pidAlive(pid int) bool {
	st, err := procfs.Read(pid)
	return err == nil && !st.Gone()
}

// privateStateProblem refuses, under leader election, definitions whose
// state is in the local backend (no backend block, or backend "local"):
// each replica keeps that state in its own -work-dir (in a pod, its own
// emptyDir, as examples/controller has it), so a new leader would plan
// from a state of its own, empty or stale, and start every experiment
// anew beside the trials of the last leader. Before, it was taken. It
// returns "" when the backend is shared (kubernetes, pg).
func (c *ctrl) privateStateProblem(cfg *schema.Config) string {
	if c.leader == nil || !c.leader.enabled || cfg == nil || cfg.Backend.BackendName() != schema.LocalBackendKind.Name {
		return ""
	}
	where := "the definitions have no backend block, so the state is in the local backend"
	if cfg.Backend != nil {
		where = cfg.Backend.DeclRange.String() + `: backend "local" keeps the state`
	}
	return where + ", in each replica's own -work-dir: with -leader-elect a new leader would plan from its own state (empty, or stale) and start every experiment anew. " +
		`Add a backend "kubernetes" block (or "pg") that every replica reaches, or run a single controller without -leader-elect`
}

// privateTrialsProblem refuses, under leader election, definitions with
// an experiment on a platform whose trials only the replica that started
// them sees (providers.Private: local trials live in the replica's own
// work directory, and in a pod they die with it). A new leader could
// neither follow nor stop them: with the replica's own working-copy
// identity it would leave them to their starter for ever (an experiment
// that never finishes), and with one identity shared by the replicas it
// would find them gone and start them again while, on one host, they
// still run. It returns "" when every experiment runs on a platform all
// replicas reach, else the problem, naming each experiment's file and
// line.
func (c *ctrl) privateTrialsProblem(cfg *schema.Config) string {
	if c.leader == nil || !c.leader.enabled || cfg == nil {
		return ""
	}
	ps := newProviderSet(cfg, c.stateDir)
	defer ps.Close()
	var bad []string
	for _, name := range sortedKeys(cfg.Experiments) {
		e := cfg.Experiments[name]
		key := "local.default"
		if e.Platform != nil {
			key = e.Platform.Kind + "." + e.Platform.Name
		}
		p, err := ps.Provider(key)
		if err != nil {
			continue // reported when planned
		}
		if pr, ok := p.(providers.Private); ok && pr.PrivateToWorkingCopy() {
			bad = append(bad, fmt.Sprintf("%s: experiment %q runs on platform %s, whose trials only the replica that starts them sees", e.DeclRange.String(), name, key))
		}
	}
	if len(bad) == 0 {
		return ""
	}
	return strings.Join(bad, "; ") + ". With -leader-elect a new leader must reach the trials of the last one: run them on a platform every replica reaches (kubernetes, remote, a cloud platform), or run a single controller without -leader-elect"
}
