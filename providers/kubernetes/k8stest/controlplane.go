// Package k8stest starts a real Kubernetes control plane for tests: etcd,
// kube-apiserver, kube-controller-manager (job, garbage-collector and
// service-account controllers) and kube-scheduler, built by
// scripts/build-k8s.sh into ~/.cache/trialform/k8s/<version>/, listening on
// 127.0.0.1 free ports with certificates, a token file and service-account
// keys generated with openssl. It also holds NodeAgent, a tiny kubelet that
// runs pods as local processes.
//
// It is test support code: it must not be imported by non-test code.
package k8stest

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// ErrNotBuilt is returned by Start when the control-plane binaries are not
// in the cache; tests skip on it.
var ErrNotBuilt = errors.New("the Kubernetes control-plane binaries are not built: run `make k8s` (scripts/build-k8s.sh) first; `make test` does it")

// BinDir finds the directory of the built binaries: $TRIALFORM_K8S_BIN, or
// what `scripts/build-k8s.sh -print` says (the cache, when its build stamp
// matches tools/k8s).
func BinDir() (string, error) {
	if d := os.Getenv("TRIALFORM_K8S_BIN"); d != "" {
		return d, nil
	}
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	out, err := exec.Command("bash", filepath.Join(root, "scripts", "build-k8s.sh"), "-print").Output()
	if err != nil {
		return "", ErrNotBuilt
	}
	return strings.TrimSpace(string(out)), nil
}

// RepoRoot is the directory holding tools/k8s/go.mod, found upwards from
// the working directory.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "tools", "k8s", "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("k8stest: no tools/k8s/go.mod above the working directory")
		}
		dir = parent
	}
}

// ControlPlane is a running control plane.
type ControlPlane struct {
	Dir        string // certificates, tokens, data, logs
	URL        string // https://127.0.0.1:PORT
	Token      string // bearer token of a system:masters user
	Kubeconfig string // path of a kubeconfig for that user (context "trialform-test")
	Config     *rest.Config
	Client     kubernetes.Interface
	CACert     string // path of the CA certificate (also signs node serving certs)
	AuditLog   string // with Options.Audit: the apiserver's audit log (JSON lines)
	CAKey      string

	bin      string
	ports    map[string]int
	ownedDir bool
	args     map[string][]string
	exes     map[string]exeEnv

	mu    sync.Mutex
	procs map[string]*exec.Cmd
	done  map[string]chan struct{}

	stopMirror context.CancelFunc // the training operator's secret mirror
}

// Options tune Start.
type Options struct {
	// Dir holds everything; "" makes a temporary directory removed by Stop.
	Dir string
	// NoScheduler and NoControllerManager leave those out.
	NoScheduler, NoControllerManager bool
	// Controllers for kube-controller-manager (default job,
	// garbagecollector, serviceaccount, serviceaccount-token, namespace).
	Controllers []string
	// CRDs installs the training operator's CRDs (TFJob, PyTorchJob,
	// MPIJob, XGBoostJob, PaddleJob, MXJob) and those of AdaptDLJob and
	// Framework (InstallCRDs) before the controller manager starts, so
	// that its garbage collector knows them from the start (it looks for
	// new resources only every 30 s).
	CRDs bool
	// Audit makes the apiserver log every request's metadata (user, verb,
	// resource, response code) as JSON lines to AuditLog.
	Audit bool
}

// Start builds nothing: it starts the binaries from BinDir and returns once
// the apiserver is ready (and, with the controller manager, the default
// service account exists in "default").
func Start(ctx context.Context, opts Options) (*ControlPlane, error) {
	bin, err := BinDir()
	if err != nil {
		return nil, err
	}
	for _, b := range []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler"} {
		if _, err := os.Stat(filepath.Join(bin, b)); err != nil {
			return nil, fmt.Errorf("%w (%s missing)", ErrNotBuilt, b)
		}
	}
	if opts.CRDs {
		if _, _, err := trainingOperatorFiles(bin); err != nil {
			return nil, err
		}
	}
	dir := opts.Dir
	owned := false
	if dir == "" {
		if dir, err = os.MkdirTemp("", "trialform-k8s-*"); err != nil {
			return nil, err
		}
		owned = true
	}
	cp := &ControlPlane{Dir: dir, bin: bin, ports: map[string]int{}, procs: map[string]*exec.Cmd{}, done: map[string]chan struct{}{}, args: map[string][]string{}, exes: map[string]exeEnv{}}
	ok := false
	defer func() {
		if !ok {
			cp.Stop()
			if owned {
				os.RemoveAll(dir)
			}
		}
	}()
	if owned {
		cp.ownedDir = true
	}
	for _, n := range []string{"etcd", "etcd-peer", "apiserver"} {
		if cp.ports[n], err = FreePort(); err != nil {
			return nil, err
		}
	}
	if err := cp.writeCredentials(); err != nil {
		return nil, err
	}
	cp.URL = "https://127.0.0.1:" + strconv.Itoa(cp.ports["apiserver"])
	etcdURL := "http://127.0.0.1:" + strconv.Itoa(cp.ports["etcd"])
	peerURL := "http://127.0.0.1:" + strconv.Itoa(cp.ports["etcd-peer"])
	if err := cp.run("etcd",
		"--name=default", "--data-dir="+filepath.Join(dir, "etcd"),
		"--listen-client-urls="+etcdURL, "--advertise-client-urls="+etcdURL,
		"--listen-peer-urls="+peerURL, "--initial-advertise-peer-urls="+peerURL,
		"--initial-cluster=default="+peerURL, "--unsafe-no-fsync", "--log-level=warn",
		"--quota-backend-bytes=4294967296",
	); err != nil {
		return nil, err
	}
	p := func(n string) string { return filepath.Join(dir, n) }
	var audit []string
	if opts.Audit {
		policy := "apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [RequestReceived]\nrules:\n- level: Metadata\n"
		if err := os.WriteFile(p("audit-policy.yaml"), []byte(policy), 0o600); err != nil {
			return nil, err
		}
		cp.AuditLog = p("audit.log")
		audit = []string{"--audit-policy-file=" + p("audit-policy.yaml"), "--audit-log-path=" + cp.AuditLog, "--audit-log-format=json", "--audit-log-mode=blocking"}
	}
	if err := cp.run("kube-apiserver", append([]string{
		"--etcd-servers=" + etcdURL,
		"--bind-address=127.0.0.1", "--advertise-address=127.0.0.1", "--secure-port=" + strconv.Itoa(cp.ports["apiserver"]),
		"--tls-cert-file=" + p("apiserver.crt"), "--tls-private-key-file=" + p("apiserver.key"),
		"--client-ca-file=" + p("ca.crt"), "--token-auth-file=" + p("tokens.csv"),
		"--authorization-mode=RBAC",
		"--service-account-key-file=" + p("sa.pub"), "--service-account-signing-key-file=" + p("sa.key"),
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-cluster-ip-range=10.0.0.0/24", "--endpoint-reconciler-type=none",
		"--kubelet-certificate-authority=" + p("ca.crt"),
		"--kubelet-client-certificate=" + p("apiserver-kubelet-client.crt"), "--kubelet-client-key=" + p("apiserver-kubelet-client.key"),
		"--kubelet-preferred-address-types=InternalIP",
		"--max-requests-inflight=2000", "--max-mutating-requests-inflight=1000",
		"--profiling=false", "--v=0",
	}, audit...)...,
	); err != nil {
		return nil, err
	}
	cp.Config = &rest.Config{Host: cp.URL, BearerToken: cp.Token, TLSClientConfig: rest.TLSClientConfig{CAFile: p("ca.crt")}, QPS: 200, Burst: 400}
	if cp.Client, err = kubernetes.NewForConfig(cp.Config); err != nil {
		return nil, err
	}
	if err := cp.waitReady(ctx); err != nil {
		return nil, err
	}
	if opts.CRDs {
		if err := InstallCRDs(ctx, cp); err != nil {
			return nil, err
		}
	}
	if !opts.NoControllerManager {
		ctrls := opts.Controllers
		if len(ctrls) == 0 {
			ctrls = []string{"job", "garbagecollector", "serviceaccount", "serviceaccount-token", "namespace",
				"persistentvolume-binder", "pvc-protection", "pv-protection"}
		}
		if err := cp.run("kube-controller-manager",
			"--kubeconfig="+cp.Kubeconfig, "--authentication-skip-lookup", "--secure-port=0",
			"--controllers="+strings.Join(ctrls, ","), "--leader-elect=false",
			"--service-account-private-key-file="+p("sa.key"), "--root-ca-file="+p("ca.crt"),
			"--use-service-account-credentials=false",
			"--kube-api-qps=1000", "--kube-api-burst=2000", "--concurrent-job-syncs=50",
			"--concurrent-gc-syncs=50", "--v=0",
		); err != nil {
			return nil, err
		}
	}
	if !opts.NoScheduler {
		cfg := fmt.Sprintf(`apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection:
  kubeconfig: %q
  qps: 1000
  burst: 2000
leaderElection:
  leaderElect: false
`, cp.Kubeconfig)
		if err := os.WriteFile(p("scheduler.yaml"), []byte(cfg), 0o600); err != nil {
			return nil, err
		}
		if err := cp.run("kube-scheduler", "--config="+p("scheduler.yaml"), "--secure-port=0", "--v=0"); err != nil {
			return nil, err
		}
	}
	if !opts.NoControllerManager {
		if err := cp.waitServiceAccount(ctx, "default"); err != nil {
			return nil, err
		}
	}
	ok = true
	return cp, nil
}

type exeEnv struct {
	exe string
	env []string
}

func randHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b)
}

// FreePort asks the kernel for a free TCP port on 127.0.0.1.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func (cp *ControlPlane) openssl(args ...string) error {
	cmd := exec.Command("openssl", args...)
	cmd.Dir = cp.Dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("openssl %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return nil
}

// IssueCert writes NAME.key and NAME.crt signed by the CA, for cn with the
// given subject alternative names ("IP:127.0.0.1", "DNS:localhost") and
// organization (a group, for client certificates).
func (cp *ControlPlane) IssueCert(name, cn, org string, sans ...string) (crt, key string, err error) {
	subj := "/CN=" + cn
	if org != "" {
		subj = "/O=" + org + subj
	}
	ext := "basicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth,clientAuth\n"
	if len(sans) > 0 {
		ext += "subjectAltName=" + strings.Join(sans, ",") + "\n"
	}
	extFile := filepath.Join(cp.Dir, name+".ext")
	if err := os.WriteFile(extFile, []byte(ext), 0o600); err != nil {
		return "", "", err
	}
	if err := cp.openssl("req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
		"-keyout", name+".key", "-out", name+".csr", "-subj", subj); err != nil {
		return "", "", err
	}
	if err := cp.openssl("x509", "-req", "-in", name+".csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
		"-out", name+".crt", "-days", "3650", "-extfile", name+".ext"); err != nil {
		return "", "", err
	}
	return filepath.Join(cp.Dir, name+".crt"), filepath.Join(cp.Dir, name+".key"), nil
}

// writeCredentials generates the CA, the apiserver's serving certificate,
// its kubelet client certificate, the service-account key pair (openssl),
// the token file and an admin kubeconfig.
func (cp *ControlPlane) writeCredentials() error {
	if err := cp.openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
		"-keyout", "ca.key", "-out", "ca.crt", "-days", "3650", "-subj", "/CN=trialform-test-ca",
		"-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign,digitalSignature"); err != nil {
		return err
	}
	cp.CACert, cp.CAKey = filepath.Join(cp.Dir, "ca.crt"), filepath.Join(cp.Dir, "ca.key")
	if _, _, err := cp.IssueCert("apiserver", "kube-apiserver", "",
		"IP:127.0.0.1", "DNS:localhost", "DNS:kubernetes", "DNS:kubernetes.default", "DNS:kubernetes.default.svc", "IP:10.0.0.1"); err != nil {
		return err
	}
	if _, _, err := cp.IssueCert("apiserver-kubelet-client", "kube-apiserver-kubelet-client", "system:masters"); err != nil {
		return err
	}
	if err := cp.openssl("genrsa", "-out", "sa.key", "2048"); err != nil {
		return err
	}
	if err := cp.openssl("rsa", "-in", "sa.key", "-pubout", "-out", "sa.pub"); err != nil {
		return err
	}
	cp.Token = "admin-" + randHex(16)
	tokens := fmt.Sprintf("%s,trialform-admin,uid-admin,\"system:masters\"\n", cp.Token)
	if err := os.WriteFile(filepath.Join(cp.Dir, "tokens.csv"), []byte(tokens), 0o600); err != nil {
		return err
	}
	cp.Kubeconfig = filepath.Join(cp.Dir, "kubeconfig")
	return os.WriteFile(cp.Kubeconfig, []byte(KubeconfigYAML("https://127.0.0.1:"+strconv.Itoa(cp.ports["apiserver"]), filepath.Join(cp.Dir, "ca.crt"), cp.Token, "")), 0o600)
}

// KubeconfigYAML renders a one-context kubeconfig ("trialform-test") for a
// token user, with namespace as the context's default when not "".
func KubeconfigYAML(server, caFile, token, namespace string) string {
	ns := ""
	if namespace != "" {
		ns = "\n    namespace: " + namespace
	}
	return fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: trialform-test
  cluster:
    server: %s
    certificate-authority: %s
users:
- name: admin
  user:
    token: %s
contexts:
- name: trialform-test
  context:
    cluster: trialform-test
    user: admin%s
current-context: trialform-test
`, server, caFile, token, ns)
}

// run starts one binary with its output in DIR/NAME.log.
func (cp *ControlPlane) run(name string, args ...string) error {
	return cp.runEnv(name, filepath.Join(cp.bin, name), nil, args...)
}

// runEnv starts exe as component name, with env (nil: this process's).
func (cp *ControlPlane) runEnv(name, exe string, env []string, args ...string) error {
	logf, err := os.OpenFile(filepath.Join(cp.Dir, name+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(exe, args...)
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Dir = cp.Dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("start %s: %w", name, err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); logf.Close(); close(done) }()
	cp.mu.Lock()
	cp.procs[name], cp.done[name], cp.args[name], cp.exes[name] = cmd, done, args, exeEnv{exe, env}
	cp.mu.Unlock()
	return nil
}

// note appends a line of the harness's own to a component's log, so that
// a failure shows what the harness did beside the component.
func (cp *ControlPlane) note(name, line string) {
	f, err := os.OpenFile(filepath.Join(cp.Dir, name+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return
	}
	fmt.Fprintf(f, "%s %s\n", time.Now().Format(time.RFC3339), line)
	f.Close()
}

// Log returns the tail of one component's log (for failure messages).
func (cp *ControlPlane) Log(name string) string {
	b, _ := os.ReadFile(filepath.Join(cp.Dir, name+".log"))
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

// WaitReady waits until the apiserver answers /readyz (90s at most).
func (cp *ControlPlane) WaitReady(ctx context.Context) error { return cp.waitReady(ctx) }

func (cp *ControlPlane) waitReady(ctx context.Context) error {
	pool := x509.NewCertPool()
	ca, err := os.ReadFile(cp.CACert)
	if err != nil {
		return err
	}
	pool.AppendCertsFromPEM(ca)
	hc := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	deadline := time.Now().Add(90 * time.Second)
	var last string
	for time.Now().Before(deadline) {
		if err := ctx.Err(); err != nil {
			return err
		}
		cp.mu.Lock()
		done := cp.done["kube-apiserver"]
		cp.mu.Unlock()
		select {
		case <-done:
			return fmt.Errorf("kube-apiserver exited:\n%s", cp.Log("kube-apiserver"))
		default:
		}
		req, _ := http.NewRequestWithContext(ctx, "GET", cp.URL+"/readyz", nil)
		req.Header.Set("Authorization", "Bearer "+cp.Token)
		resp, err := hc.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return nil
			}
			last = resp.Status
		} else {
			last = err.Error()
		}
		time.Sleep(200 * time.Millisecond)
	}
	return fmt.Errorf("kube-apiserver not ready after 90s (%s):\n%s", last, cp.Log("kube-apiserver"))
}

func (cp *ControlPlane) waitServiceAccount(ctx context.Context, ns string) error {
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if _, err := cp.Client.CoreV1().ServiceAccounts(ns).Get(ctx, "default", metav1.GetOptions{}); err == nil {
			return nil
		}
		time.Sleep(200 * time.Millisecond)
	}
	return fmt.Errorf("no default service account in %s after 60s:\n%s", ns, cp.Log("kube-controller-manager"))
}

// Alive reports whether a component's process is running.
func (cp *ControlPlane) Alive(name string) bool {
	cp.mu.Lock()
	done := cp.done[name]
	cp.mu.Unlock()
	if done == nil {
		return false
	}
	select {
	case <-done:
		return false
	default:
		return true
	}
}

// KillComponent kills one component at once (SIGKILL), as a crash does.
func (cp *ControlPlane) KillComponent(name string) {
	cp.mu.Lock()
	cmd, done := cp.procs[name], cp.done[name]
	delete(cp.procs, name)
	cp.mu.Unlock()
	if cmd != nil {
		_ = cmd.Process.Kill()
		<-done
	}
}

// StopComponent stops one component (SIGTERM, SIGKILL after 10s).
func (cp *ControlPlane) StopComponent(name string) {
	cp.mu.Lock()
	cmd, done := cp.procs[name], cp.done[name]
	delete(cp.procs, name)
	cp.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Kill()
		<-done
	}
}

// RestartComponent starts a component StopComponent stopped, with the
// arguments it had.
func (cp *ControlPlane) RestartComponent(name string) error {
	cp.mu.Lock()
	args, ok := cp.args[name]
	e := cp.exes[name]
	cp.mu.Unlock()
	if !ok {
		return fmt.Errorf("k8stest: %s was never started", name)
	}
	return cp.runEnv(name, e.exe, e.env, args...)
}

// Stop stops every component and removes Dir when Start made it.
func (cp *ControlPlane) Stop() {
	cp.mu.Lock()
	if cp.stopMirror != nil {
		cp.stopMirror()
	}
	cp.mu.Unlock()
	for _, n := range []string{"training-operator", "kube-scheduler", "kube-controller-manager", "kube-apiserver", "etcd"} {
		cp.StopComponent(n)
	}
	if cp.ownedDir && os.Getenv("TRIALFORM_K8S_KEEP") == "" {
		os.RemoveAll(cp.Dir)
	}
}
