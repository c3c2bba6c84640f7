// Package kubernetes runs trials as batch/v1 Jobs on a Kubernetes cluster
// reached with client-go through a kubeconfig.
//
// One Job per trial, named deterministically from the experiment and trial
// id (so Start is create-or-adopt), labelled trialform.io/experiment and
// trialform.io/trial and annotated with the owning state's lineage. Next to
// it a ConfigMap of the same name holds parameter.cfg, the Python helpers
// and, for small code dirs, the code; it is owned by the Job, so deleting
// the Job (background propagation) removes pods and ConfigMap. Trials
// print metrics on stdout (NNI's NNISDK_MEb'...' lines, since
// NNI_OUTPUT_DIR differs from NNI_SYS_DIR, and trialform's own lines),
// read incrementally from the pod log; the final result also goes to the
// container's termination message so it survives log rotation.
//
// The package must not import plan or apply, and must not print.
package kubernetes

import (
	"context"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/trialform/trialform/internal/kubeerr"
	"github.com/trialform/trialform/internal/netretry"
	"github.com/trialform/trialform/providers"
)

// Labels and annotations of trial objects.
const (
	LabelExperiment = "trialform.io/experiment"
	LabelTrial      = "trialform.io/trial"
	LabelManagedBy  = "app.kubernetes.io/managed-by"

	AnnLineage     = "trialform.io/lineage"
	AnnExperiment  = "trialform.io/experiment-name"
	AnnTrial       = "trialform.io/trial-id"
	AnnParameterID = "trialform.io/parameter-id"
	AnnMetricRegex = "trialform.io/metric-regex"
	AnnAttempt     = "trialform.io/attempt"
	AnnStopReason  = "trialform.io/stop-reason"
	AnnMaxDuration = "trialform.io/max-duration"
	// The rest of the ownership marker (providers.Owner) beside the
	// lineage: the experiment instance id, the generation and a digest of
	// the parameters the trial was started with.
	AnnExperimentID = "trialform.io/experiment-id"
	AnnGeneration   = "trialform.io/generation"
	AnnParamsDigest = "trialform.io/params-digest"

	containerName = "trial"

	requestTimeout = 30 * time.Second
	retryBudget    = 45 * time.Second
)

// Kubernetes is the kubernetes platform. It is safe for concurrent use.
type Kubernetes struct {
	cfg       Config
	client    *clientset // every call but log streams: 30s per request
	stream    *clientset // log streams (no timeout)
	namespace string
	// nniPlatform is the NNI_PLATFORM trials see ("kubernetes", or the
	// CRD platform's kind).
	nniPlatform string

	mu   sync.Mutex
	seen map[string]bool // exp/trial this process saw existing (a later miss is a loss)
	// listed is the last List of each experiment (see snapshots).
	listed *snapshots[*batchv1.Job]
	// logRead is when this process last read each running pod's log.
	logRead map[types.UID]time.Time
	// logForbidden is set once a pod log read was forbidden (the warning
	// Warnings gives once); logWarned once it was given.
	logForbidden, logWarned bool
	// follow, once Follow was called, keeps watched copies of the trial
	// Jobs and pods (follow.go); changed is Changed's channel.
	follow  *follower
	closed  bool
	changed chan struct{}
}

func (k *Kubernetes) cached(exp, trial string) (*batchv1.Job, []corev1.Pod, bool) {
	return k.listed.get(exp, trial)
}

// invalidate forgets the experiment's snapshot (after a change we made).
func (k *Kubernetes) invalidate(exp string) { k.listed.drop(exp) }

var (
	_ providers.Provider         = (*Kubernetes)(nil)
	_ providers.Lister           = (*Kubernetes)(nil)
	_ providers.LogStreamer      = (*Kubernetes)(nil)
	_ providers.ExperimentPurger = (*Kubernetes)(nil)
	_ providers.HandleChecker    = (*Kubernetes)(nil)
)

// New builds the client (nothing is contacted yet).
func New(cfg Config) (*Kubernetes, error) {
	rc, ns, err := cfg.restConfig()
	if err != nil {
		return nil, err
	}
	if cfg.QPS <= 0 {
		cfg.QPS = 1000
	}
	if cfg.Burst <= 0 {
		cfg.Burst = 2000
	}
	rc.QPS, rc.Burst = cfg.QPS, cfg.Burst
	rc.UserAgent = "trialform"
	if cfg.MetricsInterval == 0 {
		cfg.MetricsInterval = DefaultMetricsInterval
	}
	if cfg.Image == "" {
		cfg.Image = "python:3.11-slim"
	}
	if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
		return nil, providers.Permanent(fmt.Errorf("kubernetes platform: namespace %q: %s", ns, strings.Join(errs, "; ")))
	}
	streams, err := newClientset(rc)
	if err != nil {
		return nil, providers.Permanent(fmt.Errorf("kubernetes platform: %w", err))
	}
	// A request on a connection to an apiserver that went away can hang
	// for long; bound every request so that retries take over.
	rc.Timeout = requestTimeout
	cs, err := newClientset(rc)
	if err != nil {
		return nil, providers.Permanent(fmt.Errorf("kubernetes platform: %w", err))
	}
	return &Kubernetes{cfg: cfg, client: cs, stream: streams, namespace: ns, nniPlatform: "kubernetes", seen: map[string]bool{},
		listed: newSnapshots(func(j *batchv1.Job) string { return string(j.UID) }), logRead: map[types.UID]time.Time{},
		changed: make(chan struct{}, 1)}, nil
}

// ReadParallelism is how many Reads a refresh may run at once: each waits
// on the apiserver (and, for a running trial, on the node for its log).
func (k *Kubernetes) ReadParallelism() int { return 64 }

// Kind returns "kubernetes".
func (k *Kubernetes) Kind() string { return "kubernetes" }

// Namespace is where the trial objects go.
func (k *Kubernetes) Namespace() string { return k.namespace }

// Foreign says so when h's Job is in another namespace than the one this
// platform works in: Read, Stop and List look in this one only.
func (k *Kubernetes) Foreign(h providers.Handle) string { return foreignNamespace(h, k.namespace) }

func foreignNamespace(h providers.Handle, ns string) string {
	if got := h["namespace"]; got != "" && got != ns {
		return fmt.Sprintf("its object is in namespace %q, and the platform works in namespace %q", got, ns)
	}
	return ""
}

// Close stops following (Follow); the trials keep running.
func (k *Kubernetes) Close() error {
	k.mu.Lock()
	f := k.follow
	k.follow, k.closed = nil, true
	k.mu.Unlock()
	if f != nil {
		f.stop()
	}
	return nil
}

// Validate checks the cluster answers and the namespace exists.
func (k *Kubernetes) Validate(ctx context.Context) error {
	return retry(ctx, func() error {
		_, err := k.client.CoreV1().Namespaces().Get(ctx, k.namespace, metav1.GetOptions{})
		if what, ok := notAPIServer(err); ok {
			return providers.Permanent(fmt.Errorf("kubernetes platform: %s is not a Kubernetes API server: it answered %s to a request for namespace %q; check the server of the kubeconfig's cluster and the context (a wrong URL or path, or a proxy or ingress in front of the cluster)", k.cfg.origin, what, k.namespace))
		}
		if apierrors.IsNotFound(err) {
			return providers.Permanent(fmt.Errorf("kubernetes platform: namespace %q does not exist", k.namespace))
		}
		if apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err) {
			// Listing namespaces may be forbidden to a namespaced user;
			// reading its jobs is what matters.
			_, err = k.client.BatchV1().Jobs(k.namespace).List(ctx, metav1.ListOptions{Limit: 1})
		}
		switch {
		case apierrors.IsUnauthorized(err):
			// Retrying cannot fix credentials; the token is not quoted.
			return providers.Permanent(fmt.Errorf("kubernetes platform: the API server %s refused the credentials (401 Unauthorized): the context's token or client certificate is wrong, expired or revoked; get fresh credentials for the context (or pick another one with context = ...)", k.cfg.origin))
		case apierrors.IsForbidden(err):
			return providers.Permanent(fmt.Errorf("kubernetes platform: the API server %s does not let this account list jobs in namespace %q (403 Forbidden: %s); grant it list on jobs there (a Role and RoleBinding), or set namespace to one it may use", k.cfg.origin, k.namespace, apiMessage(err)))
		case err != nil:
			if why := untrusted(err); why != "" {
				// Retrying cannot fix a certificate.
				return providers.Permanent(fmt.Errorf("kubernetes platform: %s: %s (%w)", k.cfg.origin, why, err))
			}
			return fmt.Errorf("kubernetes platform: %s: %w", k.cfg.origin, err)
		}
		return nil
	})
}

// untrusted says what is wrong with the API server's certificate when err
// is a failed TLS verification ("" otherwise).
func untrusted(err error) string {
	var ua x509.UnknownAuthorityError
	var ci x509.CertificateInvalidError
	var hn x509.HostnameError
	switch {
	case errors.As(err, &ua):
		return "the API server's certificate is not signed by a certificate authority this kubeconfig trusts; check the cluster's certificate-authority-data (or certificate-authority) in the kubeconfig, and that server is the cluster's address, not a proxy with a certificate of its own"
	case errors.As(err, &ci) && ci.Reason == x509.Expired:
		return "the API server's certificate has expired or is not valid yet; renew the cluster's certificates (kubeadm certs renew, or your provider's way), or check this machine's clock"
	case errors.As(err, &hn):
		return "the API server's certificate is not valid for this address; use the address the certificate names as the cluster's server (or set its tls-server-name)"
	case errors.As(err, &ci):
		return "the API server's certificate is not valid; check the cluster's certificate-authority-data and server in the kubeconfig"
	}
	return ""
}

// listErr is the error of a list of resource in namespace ns: a 403 says
// what to grant (RBAC: a Role that lets the account list its Jobs but not
// their pods is a common slip) and is not retried.
func listErr(what, resource, ns string, err error) error {
	if apierrors.IsForbidden(err) {
		return providers.Permanent(fmt.Errorf("%s: %w (403 Forbidden); grant this account list on %s in namespace %q (a Role and RoleBinding), or set namespace to one it may use", what, err, resource, ns))
	}
	return fmt.Errorf("%s: %w", what, err)
}

// apiMessage is the message of an API error's Status.
func apiMessage(err error) string {
	var se *apierrors.StatusError
	if errors.As(err, &se) && se.ErrStatus.Message != "" {
		return se.ErrStatus.Message
	}
	return err.Error()
}

// notAPIServer says whether err is an answer no kube-apiserver gives: an
// error status without a Status body (an empty or HTML 404 from a wrong
// URL, a proxy, an ingress); what is the status and the start of the body.
func notAPIServer(err error) (what string, ok bool) {
	var se *apierrors.StatusError
	if !errors.As(err, &se) || se.ErrStatus.Details == nil {
		return "", false
	}
	for _, c := range se.ErrStatus.Details.Causes {
		if c.Type != metav1.CauseTypeUnexpectedServerResponse {
			continue
		}
		what = fmt.Sprintf("HTTP %d", se.ErrStatus.Code)
		body := strings.TrimSpace(c.Message)
		switch body {
		case "":
			what += " with an empty body"
		case "unknown": // client-go's word for a body that is not text
			what += " without a Kubernetes Status in its body"
		default:
			if len(body) > 60 {
				body = body[:60] + "..."
			}
			what += fmt.Sprintf(" %q", body)
		}
		return what, true
	}
	return "", false
}

func (k *Kubernetes) markSeen(exp, trial string, seen bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if seen {
		k.seen[exp+"/"+trial] = true
	} else {
		delete(k.seen, exp+"/"+trial)
	}
}

func (k *Kubernetes) wasSeen(exp, trial string) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.seen[exp+"/"+trial]
}

// JobName is the deterministic object name of a trial: a DNS-1123 label of
// at most 63 characters (it is also the pods' job-name label value).
func JobName(exp, trial string) string {
	h := sha256.Sum256([]byte(exp + "\x00" + trial))
	return "tf-" + slug(exp, 24) + "-" + slug(trial, 20) + "-" + hex.EncodeToString(h[:])[:8]
}

func slug(s string, max int) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
		if b.Len() >= max {
			break
		}
	}
	out := strings.Trim(b.String(), "-")
	if out == "" {
		out = "x"
	}
	return out
}

// LabelValue is s when it is a valid label value, else a hash of it.
func LabelValue(s string) string {
	if len(validation.IsValidLabelValue(s)) == 0 {
		return s
	}
	h := sha256.Sum256([]byte(s))
	return "h-" + hex.EncodeToString(h[:])[:40]
}

func checkName(what, s string) error {
	if s == "" || len(s) > 200 || strings.ContainsAny(s, "/\x00") {
		return providers.Permanent(fmt.Errorf("%s %q is not usable on kubernetes", what, s))
	}
	return nil
}

func validateStart(req providers.StartRequest) error {
	if err := checkName("experiment", req.Experiment); err != nil {
		return err
	}
	if err := checkName("trial id", req.TrialID); err != nil {
		return err
	}
	switch {
	case req.Shell == "" && len(req.Args) == 0:
		return providers.Permanent(errors.New("trial has neither a command nor args"))
	case req.Shell != "" && len(req.Args) > 0:
		return providers.Permanent(errors.New("trial has both a command and args"))
	case len(req.Args) > 0 && req.Args[0] == "":
		return providers.Permanent(errors.New("trial args start with an empty program name"))
	case req.GPUs < 0:
		return providers.Permanent(fmt.Errorf("gpus = %d is negative", req.GPUs))
	case req.MaxDuration < 0:
		return providers.Permanent(fmt.Errorf("max_duration %s is negative", req.MaxDuration))
	}
	if req.MetricRegex != "" {
		re, err := regexp.Compile(req.MetricRegex)
		if err != nil {
			return providers.Permanent(fmt.Errorf("metric regex: %w", err))
		}
		if re.SubexpIndex("value") < 0 {
			return providers.Permanent(fmt.Errorf("metric regex %q has no (?P<value>...) group", req.MetricRegex))
		}
	}
	return nil
}

// apiRetry is trialform's retry policy (internal/netretry) for the
// Kubernetes API: 100 ms doubling to 5 s, jittered, for 45 s at most.
var apiRetry = netretry.Policy{Attempts: -1, Base: 100 * time.Millisecond, Max: 5 * time.Second, MaxElapsed: retryBudget}

// retry runs fn under apiRetry while its error is transient (see
// transient). A Conflict is not retried: the same write fails the same
// way; a write that can conflict re-reads with retryConflict.
func retry(ctx context.Context, fn func() error) error {
	return retryWith(ctx, transient, fn)
}

// retryConflict is retry for an fn that reads what it writes each time it
// runs (a Get before an Update, a Create after a NotFound): a Conflict
// (apierrors.IsConflict: the object changed, or was created or deleted
// meanwhile) runs it again, so it re-reads.
func retryConflict(ctx context.Context, fn func() error) error {
	return retryWith(ctx, func(err error) (bool, time.Duration) {
		if apierrors.IsConflict(err) {
			return true, 0
		}
		return transient(err)
	}, fn)
}

func retryWith(ctx context.Context, classify netretry.Classifier, fn func() error) error {
	err := apiRetry.Do(ctx, classify, func(context.Context) error { return fn() })
	if err != nil && ctx.Err() != nil && !errors.Is(err, ctx.Err()) {
		return fmt.Errorf("%w (last error: %v)", ctx.Err(), err)
	}
	return err
}

// transient classifies an API error (internal/kubeerr, the kubernetes
// state backend's rule too); an error the platform marked permanent is
// final.
func transient(err error) (bool, time.Duration) {
	if providers.IsPermanent(err) {
		return false, 0
	}
	return kubeerr.Transient(err)
}
