package k8stest

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// NodeAgent is a minimal kubelet for tests: it registers a Node, runs the
// first container of every pod scheduled to it as a local process, writes
// the pod's status (running, then terminated with exit code and
// termination message) back through the API, stops processes of deleted
// pods (SIGTERM, SIGKILL after the grace period) and serves their logs on
// the kubelet's containerLogs path, which the apiserver proxies pods/log
// to.
//
// Volumes are emulated on the local file system: the agent maps each mount
// path to a host directory (emptyDir, configMap and projected volumes get a
// per-pod directory, a persistentVolumeClaim a per-claim directory, hostPath
// and nfs volumes their path, since the test machine is its own NFS server)
// and rewrites the working directory, the env values, the command and the
// termination message path that start with a mount path. Nothing else of a
// real container (image, namespaces, limits) exists.
type NodeAgent struct {
	Name   string
	Dir    string
	Port   int
	client kubernetes.Interface

	srv    *http.Server
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu   sync.Mutex
	pods map[types.UID]*agentPod
	logf *os.File
}

// logf appends a line to DIR/agent.log.
func (a *NodeAgent) log(format string, args ...any) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.logf != nil {
		fmt.Fprintf(a.logf, time.Now().Format("15:04:05.000 ")+format+"\n", args...)
	}
}

// Log returns the agent's own log.
func (a *NodeAgent) Log() string {
	b, _ := os.ReadFile(filepath.Join(a.Dir, "agent.log"))
	return string(b)
}

type agentPod struct {
	ns, name string
	uid      types.UID
	dir      string
	logPath  string
	exited   chan struct{}

	mu     sync.Mutex
	cmd    *exec.Cmd
	killed bool
	grace  time.Duration
}

// AgentOptions tune StartNodeAgent.
type AgentOptions struct {
	// Capacity of the node (default cpu 64, memory 256Gi, pods 2000,
	// nvidia.com/gpu 8).
	Capacity corev1.ResourceList
	Labels   map[string]string
}

// StartNodeAgent registers node name and starts running its pods.
func StartNodeAgent(ctx context.Context, cp *ControlPlane, name string, opts AgentOptions) (*NodeAgent, error) {
	dir := filepath.Join(cp.Dir, "nodes", name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	crt, key, err := cp.IssueCert("node-"+name, "system:node:"+name, "system:nodes", "IP:127.0.0.1", "DNS:localhost", "DNS:"+name)
	if err != nil {
		return nil, err
	}
	cert, err := tls.LoadX509KeyPair(crt, key)
	if err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	// Bound every request: one on a connection to an apiserver that went
	// away may hang otherwise (watches end server-side after 30s).
	rc := rest.CopyConfig(cp.Config)
	rc.Timeout = 60 * time.Second
	client, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, err
	}
	a := &NodeAgent{Name: name, Dir: dir, Port: l.Addr().(*net.TCPAddr).Port, client: client, pods: map[types.UID]*agentPod{}}
	a.logf, _ = os.OpenFile(filepath.Join(dir, "agent.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	mux := http.NewServeMux()
	mux.HandleFunc("/containerLogs/", a.serveLogs)
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok") })
	a.srv = &http.Server{Handler: mux, TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}}}
	go a.srv.ServeTLS(l, "", "")

	capacity := opts.Capacity
	if capacity == nil {
		capacity = corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("64"), corev1.ResourceMemory: resource.MustParse("256Gi"),
			corev1.ResourcePods: resource.MustParse("2000"), "nvidia.com/gpu": resource.MustParse("8"),
		}
	}
	labels := map[string]string{"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "type": "trialform-node-agent"}
	for k, v := range opts.Labels {
		labels[k] = v
	}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	created, err := cp.Client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		created, err = cp.Client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	}
	if err != nil {
		a.srv.Close()
		return nil, fmt.Errorf("register node %s: %w", name, err)
	}
	now := metav1.Now()
	created.Status = corev1.NodeStatus{
		Capacity: capacity, Allocatable: capacity,
		Addresses:       []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "127.0.0.1"}, {Type: corev1.NodeHostName, Address: name}},
		DaemonEndpoints: corev1.NodeDaemonEndpoints{KubeletEndpoint: corev1.DaemonEndpoint{Port: int32(a.Port)}},
		Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
			Message: "trialform test node agent", LastHeartbeatTime: now, LastTransitionTime: now}},
		NodeInfo: corev1.NodeSystemInfo{KubeletVersion: "v1.34.4-trialform-agent", OperatingSystem: "linux", Architecture: "amd64"},
	}
	if _, err := cp.Client.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		a.srv.Close()
		return nil, fmt.Errorf("node %s status: %w", name, err)
	}
	// The NodeRestriction/TaintNodesByCondition admission gives a new node
	// the not-ready taint; the node lifecycle controller (not run here)
	// would lift it once the node is Ready, so lift it as it would.
	if err := retryConflict(ctx, func() error {
		n, err := cp.Client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		var keep []corev1.Taint
		for _, t := range n.Spec.Taints {
			if t.Key != corev1.TaintNodeNotReady && t.Key != corev1.TaintNodeUnreachable {
				keep = append(keep, t)
			}
		}
		n.Spec.Taints = keep
		_, err = cp.Client.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{})
		return err
	}); err != nil {
		a.srv.Close()
		return nil, fmt.Errorf("node %s: lift the not-ready taint: %w", name, err)
	}
	actx, cancel := context.WithCancel(context.Background())
	a.cancel = cancel
	a.wg.Add(1)
	go a.loop(actx)
	return a, nil
}

// Stop stops watching, kills every pod process it runs and deletes its
// Node.
func (a *NodeAgent) Stop() {
	a.cancel()
	a.wg.Wait()
	a.mu.Lock()
	pods := make([]*agentPod, 0, len(a.pods))
	for _, p := range a.pods {
		pods = append(pods, p)
	}
	a.mu.Unlock()
	for _, p := range pods {
		p.kill(0)
	}
	a.srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = a.client.CoreV1().Nodes().Delete(ctx, a.Name, metav1.DeleteOptions{})
}

// loop lists and watches this node's pods until ctx ends.
func (a *NodeAgent) loop(ctx context.Context) {
	defer a.wg.Done()
	sel := fields.OneTermEqualSelector("spec.nodeName", a.Name).String()
	for ctx.Err() == nil {
		list, err := a.client.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: sel})
		if err != nil {
			a.log("list pods: %v", err)
			sleep(ctx, 200*time.Millisecond)
			continue
		}
		for i := range list.Items {
			a.sync(ctx, &list.Items[i])
		}
		// Each watch lasts 20s at most, then everything is listed again:
		// a watch on a connection to an apiserver that crashed may
		// otherwise hang without an error.
		to := int64(15)
		wctx, wcancel := context.WithTimeout(ctx, 20*time.Second)
		w, err := a.client.CoreV1().Pods("").Watch(wctx, metav1.ListOptions{FieldSelector: sel, ResourceVersion: list.ResourceVersion, AllowWatchBookmarks: true, TimeoutSeconds: &to})
		if err != nil {
			a.log("watch pods: %v", err)
			wcancel()
			sleep(ctx, 200*time.Millisecond)
			continue
		}
		for ev := range w.ResultChan() {
			pod, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			switch ev.Type {
			case watch.Added, watch.Modified:
				a.sync(ctx, pod)
			case watch.Deleted:
				a.forget(pod.UID)
			}
		}
		w.Stop()
		wcancel()
	}
}

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

func (a *NodeAgent) forget(uid types.UID) {
	a.mu.Lock()
	p := a.pods[uid]
	delete(a.pods, uid)
	a.mu.Unlock()
	if p != nil {
		p.kill(0)
	}
}

// sync starts a new pod's process, or stops a deleted pod's.
func (a *NodeAgent) sync(ctx context.Context, pod *corev1.Pod) {
	a.mu.Lock()
	p := a.pods[pod.UID]
	a.mu.Unlock()
	if pod.DeletionTimestamp != nil {
		grace := time.Duration(0)
		if pod.DeletionGracePeriodSeconds != nil {
			grace = time.Duration(*pod.DeletionGracePeriodSeconds) * time.Second
		}
		go a.terminate(ctx, pod, p, grace)
		return
	}
	if p != nil || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return
	}
	a.log("pod %s/%s: start", pod.Namespace, pod.Name)
	p = &agentPod{ns: pod.Namespace, name: pod.Name, uid: pod.UID, dir: filepath.Join(a.Dir, "pods", string(pod.UID)), exited: make(chan struct{})}
	p.logPath = filepath.Join(p.dir, "log")
	a.mu.Lock()
	a.pods[pod.UID] = p
	a.mu.Unlock()
	go a.run(ctx, pod.DeepCopy(), p)
}

// terminate stops a deleted pod's process and then removes the pod object,
// as the kubelet does once its containers are gone.
func (a *NodeAgent) terminate(ctx context.Context, pod *corev1.Pod, p *agentPod, grace time.Duration) {
	if p != nil {
		p.kill(grace)
		select {
		case <-p.exited:
		case <-ctx.Done():
			return
		}
	}
	uid := pod.UID
	zero := int64(0)
	err := a.client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero, Preconditions: &metav1.Preconditions{UID: &uid}})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		_ = err // the next watch event retries
	}
}

// kill sends SIGTERM to the process group, SIGKILL after grace; a pod
// whose process has not started yet is killed as soon as it starts.
func (p *agentPod) kill(grace time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.killed {
		return
	}
	p.killed, p.grace = true, grace
	if p.cmd != nil {
		p.signal()
	}
}

// signal stops the started process; p.mu is held.
func (p *agentPod) signal() {
	pgid := p.cmd.Process.Pid
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	grace := p.grace
	go func() {
		select {
		case <-p.exited:
		case <-time.After(grace):
		}
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
	}()
}

// run materialises volumes, starts the process, reports Running and then
// the outcome.
func (a *NodeAgent) run(ctx context.Context, pod *corev1.Pod, p *agentPod) {
	defer func() {
		select {
		case <-p.exited:
		default:
			close(p.exited)
		}
	}()
	started := metav1.Now()
	fail := func(reason, msg string) {
		a.log("pod %s/%s: %s: %s", pod.Namespace, pod.Name, reason, msg)
		a.report(ctx, pod, corev1.PodFailed, &corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
			ExitCode: 128, Reason: reason, Message: msg, StartedAt: started, FinishedAt: metav1.Now()}})
	}
	if len(pod.Spec.Containers) == 0 {
		fail("NoContainer", "the pod has no container")
		return
	}
	c := pod.Spec.Containers[0]
	if err := os.MkdirAll(p.dir, 0o755); err != nil {
		fail("AgentError", err.Error())
		return
	}
	// Like the kubelet, keep trying to set up the volumes (the ConfigMap
	// may not be readable yet, the apiserver may be away) until the pod
	// is deleted.
	var rw [][2]string
	for delay := 100 * time.Millisecond; ; delay = min(2*delay, 2*time.Second) {
		vctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		var err error
		rw, err = a.volumes(vctx, pod, p)
		cancel()
		if err == nil {
			break
		}
		a.log("pod %s/%s: volumes (retrying): %v", pod.Namespace, pod.Name, err)
		p.mu.Lock()
		killed := p.killed
		p.mu.Unlock()
		if killed || ctx.Err() != nil {
			return
		}
		sleep(ctx, delay)
	}
	tmPath := c.TerminationMessagePath
	if tmPath == "" {
		tmPath = corev1.TerminationMessagePathDefault
	}
	hostTM := filepath.Join(p.dir, "termination-log")
	rw = append(rw, [2]string{tmPath, hostTM})
	sort.Slice(rw, func(i, j int) bool { return len(rw[i][0]) > len(rw[j][0]) })
	rewrite := func(s string) string {
		for _, m := range rw {
			if s == m[0] || strings.HasPrefix(s, strings.TrimSuffix(m[0], "/")+"/") {
				return m[1] + s[len(m[0]):]
			}
		}
		return s
	}
	argv := append(append([]string{}, c.Command...), c.Args...)
	if len(argv) == 0 {
		fail("CreateContainerError", "the node agent cannot run an image's entrypoint: the container needs a command")
		return
	}
	for i := range argv {
		argv[i] = rewrite(argv[i])
	}
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + p.dir, "HOSTNAME=" + pod.Name, "KUBERNETES_SERVICE_HOST=127.0.0.1"}
	for _, e := range c.Env {
		v := e.Value
		if e.ValueFrom != nil && e.ValueFrom.FieldRef != nil {
			switch e.ValueFrom.FieldRef.FieldPath {
			case "metadata.name":
				v = pod.Name
			case "metadata.namespace":
				v = pod.Namespace
			case "metadata.uid":
				v = string(pod.UID)
			case "spec.nodeName":
				v = a.Name
			}
		}
		env = append(env, e.Name+"="+rewrite(v))
	}
	logf, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		fail("AgentError", err.Error())
		return
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = env
	cmd.Dir = p.dir
	if c.WorkingDir != "" {
		cmd.Dir = rewrite(c.WorkingDir)
	}
	clog := &criLog{f: logf}
	stdout, stderr := &lineWriter{log: clog, stream: "stdout"}, &lineWriter{log: clog, stream: "stderr"}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	// A child that keeps the pipes open must not hold Wait forever.
	cmd.WaitDelay = 2 * time.Second
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	p.mu.Lock()
	if p.killed {
		p.mu.Unlock()
		logf.Close()
		return
	}
	if err := cmd.Start(); err != nil {
		p.mu.Unlock()
		logf.Close()
		fail("StartError", err.Error())
		return
	}
	p.cmd = cmd
	p.mu.Unlock()
	started = metav1.Now()
	a.report(ctx, pod, corev1.PodRunning, &corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: started}})
	werr := cmd.Wait()
	stdout.flush()
	stderr.flush()
	logf.Close()
	close(p.exited)
	code := 0
	var ee *exec.ExitError
	if errors.As(werr, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			code = 128 + int(ws.Signal())
		} else {
			code = ee.ExitCode()
		}
	} else if werr != nil {
		code = 128
	}
	msg, _ := os.ReadFile(hostTM)
	if len(msg) > 4096 {
		msg = msg[len(msg)-4096:]
	}
	reason, phase := "Completed", corev1.PodSucceeded
	if code != 0 {
		reason, phase = "Error", corev1.PodFailed
	}
	a.report(ctx, pod, phase, &corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
		ExitCode: int32(code), Reason: reason, Message: string(msg), StartedAt: started, FinishedAt: metav1.Now(),
		ContainerID: "trialform-agent://" + strconv.Itoa(cmd.Process.Pid)}})
}

// volumes maps every volume mount of the first container to a host
// directory, creating emptyDir and configMap contents.
func (a *NodeAgent) volumes(ctx context.Context, pod *corev1.Pod, p *agentPod) ([][2]string, error) {
	host := map[string]string{}
	for _, v := range pod.Spec.Volumes {
		d := filepath.Join(p.dir, "volumes", v.Name)
		switch {
		case v.HostPath != nil:
			d = v.HostPath.Path
		case v.NFS != nil:
			d = v.NFS.Path
		case v.PersistentVolumeClaim != nil:
			d = filepath.Join(a.Dir, "pvc", pod.Namespace, v.PersistentVolumeClaim.ClaimName)
		case v.ConfigMap != nil:
			cm, err := a.client.CoreV1().ConfigMaps(pod.Namespace).Get(ctx, v.ConfigMap.Name, metav1.GetOptions{})
			if err != nil {
				return nil, fmt.Errorf("volume %s: configmap %s: %w", v.Name, v.ConfigMap.Name, err)
			}
			files := map[string]string{}
			if len(v.ConfigMap.Items) == 0 {
				for k := range cm.Data {
					files[k] = k
				}
				for k := range cm.BinaryData {
					files[k] = k
				}
			}
			for _, it := range v.ConfigMap.Items {
				files[it.Key] = it.Path
			}
			for k, rel := range files {
				data, ok := cm.Data[k]
				if !ok {
					b, ok2 := cm.BinaryData[k]
					if !ok2 {
						return nil, fmt.Errorf("volume %s: configmap %s has no key %s", v.Name, cm.Name, k)
					}
					data = string(b)
				}
				dst := filepath.Join(d, filepath.FromSlash(rel))
				if !strings.HasPrefix(dst, d+string(filepath.Separator)) {
					return nil, fmt.Errorf("volume %s: path %q leaves the volume", v.Name, rel)
				}
				if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
					return nil, err
				}
				mode := os.FileMode(0o644)
				if v.ConfigMap.DefaultMode != nil {
					mode = os.FileMode(*v.ConfigMap.DefaultMode)
				}
				if err := os.WriteFile(dst, []byte(data), mode); err != nil {
					return nil, err
				}
			}
		}
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
		host[v.Name] = d
	}
	var rw [][2]string
	for _, m := range pod.Spec.Containers[0].VolumeMounts {
		d, ok := host[m.Name]
		if !ok {
			return nil, fmt.Errorf("mount %s: no volume %s", m.MountPath, m.Name)
		}
		if m.SubPath != "" {
			d = filepath.Join(d, m.SubPath)
			if err := os.MkdirAll(d, 0o755); err != nil {
				return nil, err
			}
		}
		rw = append(rw, [2]string{filepath.Clean(m.MountPath), d})
	}
	return rw, nil
}

// report writes the pod's phase and container state, retrying conflicts.
func (a *NodeAgent) report(ctx context.Context, pod *corev1.Pod, phase corev1.PodPhase, state *corev1.ContainerState) {
	// Like the kubelet's status manager, keep trying until the apiserver
	// takes it (it may be away for a while) or the pod is gone.
	attempt := func(ctx context.Context) (bool, error) {
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		cur, err := a.client.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		if err != nil || cur.UID != pod.UID {
			if err != nil {
				a.log("pod %s/%s: status %s: %v", pod.Namespace, pod.Name, phase, err)
			}
			return err == nil, nil
		}
		now := metav1.Now()
		st := &cur.Status
		st.Phase = phase
		st.HostIP, st.PodIP = "127.0.0.1", "127.0.0.1"
		st.HostIPs, st.PodIPs = []corev1.HostIP{{IP: "127.0.0.1"}}, []corev1.PodIP{{IP: "127.0.0.1"}}
		if st.StartTime == nil {
			st.StartTime = &now
		}
		running := phase == corev1.PodRunning
		ready := corev1.ConditionFalse
		if running {
			ready = corev1.ConditionTrue
		}
		st.Conditions = []corev1.PodCondition{
			{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: now},
			{Type: corev1.PodInitialized, Status: corev1.ConditionTrue, LastTransitionTime: now},
			{Type: corev1.ContainersReady, Status: ready, LastTransitionTime: now},
			{Type: corev1.PodReady, Status: ready, LastTransitionTime: now},
		}
		c := cur.Spec.Containers[0]
		st.ContainerStatuses = []corev1.ContainerStatus{{Name: c.Name, Image: c.Image, ImageID: c.Image, State: *state,
			Ready: running, Started: &running, ContainerID: "trialform-agent://" + string(pod.UID)}}
		_, err = a.client.CoreV1().Pods(pod.Namespace).UpdateStatus(ctx, cur, metav1.UpdateOptions{})
		if err != nil {
			a.log("pod %s/%s: status %s: %v", pod.Namespace, pod.Name, phase, err)
			return false, nil
		}
		a.log("pod %s/%s: status %s", pod.Namespace, pod.Name, phase)
		return true, nil
	}
	for delay := 50 * time.Millisecond; ctx.Err() == nil; delay = min(2*delay, time.Second) {
		if done, _ := attempt(ctx); done {
			return
		}
		sleep(ctx, delay)
	}
}

// serveLogs answers GET /containerLogs/NS/POD/CONTAINER with the kubelet's
// query options (see crilog.go).
func (a *NodeAgent) serveLogs(w http.ResponseWriter, r *http.Request) {
	parts := strings.Split(strings.TrimPrefix(r.URL.Path, "/containerLogs/"), "/")
	if len(parts) != 3 {
		http.Error(w, "want /containerLogs/NAMESPACE/POD/CONTAINER", http.StatusBadRequest)
		return
	}
	if r.URL.Query().Get("previous") == "true" {
		http.Error(w, "previous terminated container not found", http.StatusBadRequest)
		return
	}
	var p *agentPod
	a.mu.Lock()
	for _, x := range a.pods {
		if x.ns == parts[0] && x.name == parts[1] {
			p = x
		}
	}
	a.mu.Unlock()
	if p == nil {
		http.Error(w, fmt.Sprintf("pod %s/%s not found on node %s", parts[0], parts[1], a.Name), http.StatusNotFound)
		return
	}
	opts, err := parseLogOptions(r.URL.Query())
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	writeLog(w, r, p.logPath, opts, p.exited)
}

func retryConflict(ctx context.Context, fn func() error) error {
	for i := 0; ; i++ {
		err := fn()
		if err == nil || !apierrors.IsConflict(err) || i > 20 {
			return err
		}
		sleep(ctx, 50*time.Millisecond)
	}
}
