package command_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/trialform/trialform/internal/incluster"
	"github.com/trialform/trialform/internal/testdeps"
	k8s "github.com/trialform/trialform/providers/kubernetes"
	"github.com/trialform/trialform/providers/kubernetes/k8stest"
	"github.com/trialform/trialform/state"
)

// The definitions the in-cluster controller follows: the state and the
// trials in its namespace. "slow" runs until it is removed.
const rbacDefs = `backend "kubernetes" {
  namespace = "%[1]s"
}

platform "kubernetes" "k" {
  namespace = "%[1]s"
}

search_space "s" {
  param "x" { uniform = [0, 1] }
}

experiment "quick" {
  platform     = platform.kubernetes.k
  search_space = search_space.s
  max_trials   = 2
  concurrency  = 2
  trial {
    command = "python3 quick.py"
  }
}
%[2]s`

const rbacSlow = `
experiment "slow" {
  platform     = platform.kubernetes.k
  search_space = search_space.s
  max_trials   = 1
  trial {
    command = "python3 slow.py"
  }
}
`

// manifests reads the YAML documents of examples/controller.
func manifests(t *testing.T) map[string][][]byte {
	t.Helper()
	files, err := filepath.Glob("../../examples/controller/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("examples/controller/*.yaml: %v (%d files)", err, len(files))
	}
	out := map[string][][]byte{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, doc := range strings.Split("\n"+string(b), "\n---") {
			var tm metav1.TypeMeta
			if err := yaml.Unmarshal([]byte(doc), &tm); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			if tm.Kind == "" {
				continue
			}
			out[tm.Kind] = append(out[tm.Kind], []byte(doc))
		}
	}
	return out
}

func one[T any](t *testing.T, docs map[string][][]byte, kind string) *T {
	t.Helper()
	if len(docs[kind]) != 1 {
		t.Fatalf("examples/controller has %d %s objects, want 1", len(docs[kind]), kind)
	}
	v := new(T)
	if err := yaml.UnmarshalStrict(docs[kind][0], v); err != nil {
		t.Fatalf("examples/controller's %s: %v", kind, err)
	}
	return v
}

// auditKey is one kind of request: "verb group/resource[/subresource]".
func auditKey(verb, group, resource string) string {
	if group == "" {
		group = "core"
	}
	return verb + " " + group + "/" + resource
}

// TestControllerInClusterRBAC applies examples/controller's Namespace,
// ServiceAccount, Role and RoleBinding to the test control plane, runs
// the real `trialform controller` with the Deployment's arguments as a
// pod runs it (KUBERNETES_SERVICE_HOST/PORT, that ServiceAccount's token,
// ca.crt and namespace files, no kubeconfig), with the kubernetes state
// backend, the kubernetes platform and leader election, through a life:
// trials created (over the ConfigMaps a Start killed midway left),
// run and collected, an experiment removed and its
// running trial stopped once approved. The apiserver's audit log then
// says what the ServiceAccount asked: a request refused fails the test
// (a verb missing from the Role), and so does a verb of the Role it never
// used (the Role grants more than needed). Issue 27, item 5.
func TestControllerInClusterRBAC(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("end to end")
	}
	testdeps.Python3(t)
	git := testdeps.LookPath(t, "git")
	docs := manifests(t)
	nsObj := one[corev1.Namespace](t, docs, "Namespace")
	sa := one[corev1.ServiceAccount](t, docs, "ServiceAccount")
	role := one[rbacv1.Role](t, docs, "Role")
	binding := one[rbacv1.RoleBinding](t, docs, "RoleBinding")
	dep := one[appsv1.Deployment](t, docs, "Deployment")
	ns := nsObj.Name
	if dep.Spec.Template.Spec.ServiceAccountName != sa.Name || binding.Subjects[0].Name != sa.Name || binding.RoleRef.Name != role.Name {
		t.Fatalf("the Deployment's service account %q, the binding's subject %q and role %q do not match the ServiceAccount %q and Role %q",
			dep.Spec.Template.Spec.ServiceAccountName, binding.Subjects[0].Name, binding.RoleRef.Name, sa.Name, role.Name)
	}
	if n := *dep.Spec.Replicas; n != 2 {
		t.Errorf("the Deployment runs %d replicas, want 2", n)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	cp, _ := startClusterWithNode(ctx, t, k8stest.Options{Audit: true})
	k := cp.Client
	if _, err := k.CoreV1().Namespaces().Create(ctx, nsObj, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := k.CoreV1().ServiceAccounts(ns).Create(ctx, sa, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := k.RbacV1().Roles(ns).Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := k.RbacV1().RoleBindings(ns).Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	secs := int64(3600)
	tr, err := k.CoreV1().ServiceAccounts(ns).CreateToken(ctx, sa.Name, &authv1.TokenRequest{Spec: authv1.TokenRequestSpec{ExpirationSeconds: &secs}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	top := t.TempDir()
	saDir := filepath.Join(top, "serviceaccount")
	os.MkdirAll(saDir, 0o755)
	caPEM, err := os.ReadFile(cp.CACert)
	if err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string][]byte{"token": []byte(tr.Status.Token), "ca.crt": caPEM, "namespace": []byte(ns)} {
		if err := os.WriteFile(filepath.Join(saDir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// The RBAC authorizer learns of the binding from a watch: wait until
	// the ServiceAccount may do what the Role says.
	waitAllowed(ctx, t, cp, ns, sa.Name, "list", "batch", "jobs")

	// What a Start killed before it created its Job leaves behind: the
	// ConfigMap of quick's t0001 (no owner: it is replaced), and that of
	// t0000 owned by an earlier attempt's Job whose deletion is pending (a
	// finalizer holds it): it is deleted and created again.
	old, err := k.BatchV1().Jobs(ns).Create(ctx, &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "earlier-attempt", Finalizers: []string{"trialform.test/hold"}},
		Spec: batchv1.JobSpec{Suspend: ptrTo(true), Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "c", Image: "none"}}}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := k.BatchV1().Jobs(ns).Delete(ctx, old.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	for id, owners := range map[string][]metav1.OwnerReference{
		"t0001": nil,
		"t0000": {{APIVersion: "batch/v1", Kind: "Job", Name: old.Name, UID: old.UID}},
	} {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: k8s.JobName("quick", id), Namespace: ns, OwnerReferences: owners}, Data: map[string]string{"parameter.cfg": "{}"}}
		if _, err := k.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	// The repository.
	home := filepath.Join(top, "home") // no ~/.kube/config there
	os.MkdirAll(home, 0o755)
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "NO_COLOR=1", "PYTHONDONTWRITEBYTECODE=1",
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com"}
	for _, v := range []string{"PYENV_ROOT", "PYENV_VERSION", "PYTHONPATH", "TMPDIR"} {
		if x, ok := os.LookupEnv(v); ok {
			env = append(env, v+"="+x)
		}
	}
	repo := filepath.Join(top, "repo")
	gitRun := func(args ...string) {
		t.Helper()
		cmd := exec.Command(git, args...)
		cmd.Env = env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	gitRun("init", "-q", "-b", "main", repo)
	defsDir := filepath.Join(repo, "experiments")
	os.MkdirAll(defsDir, 0o755)
	os.WriteFile(filepath.Join(defsDir, "main.hcl"), []byte(fmt.Sprintf(rbacDefs, ns, rbacSlow)), 0o644)
	os.WriteFile(filepath.Join(defsDir, "quick.py"), []byte("import nni\np = nni.get_next_parameter()\nnni.report_final_result(p['x'])\n"), 0o644)
	os.WriteFile(filepath.Join(defsDir, "slow.py"), []byte("import time, nni\np = nni.get_next_parameter()\nnni.report_intermediate_result(p['x'])\ntime.sleep(600)\n"), 0o644)
	gitRun("-C", repo, "add", "-A")
	gitRun("-C", repo, "commit", "-q", "-m", "v1")

	// The Deployment's arguments, with the repository, the work dir
	// (the emptyDir), the listen address and the Secrets' files mapped
	// to this test's.
	work := filepath.Join(top, "work")
	os.MkdirAll(work, 0o755)
	c := dep.Spec.Template.Spec.Containers[0]
	var args []string
	for _, a := range c.Args {
		name, val, _ := strings.Cut(a, "=")
		switch name {
		case "-repo":
			val = (&url.URL{Scheme: "file", Path: repo}).String()
		case "-path":
			val = "experiments"
		case "-work-dir":
			val = work
		case "-listen":
			val = "127.0.0.1:0"
		case "-git-token-file", "-dashboard-token-file":
			f := filepath.Join(top, strings.TrimPrefix(name, "-"))
			os.WriteFile(f, []byte("t"+name+"\n"), 0o600)
			val = f
		case "-interval":
			val = "1s"
		}
		if val != "" {
			a = name + "=" + val
		}
		args = append(args, a)
	}
	// A short lease, so that the handover at the end is quick.
	args = append(args, "-leader-elect-lease-duration=4s", "-leader-elect-renew-deadline=3s", "-leader-elect-retry-period=500ms")
	if args[0] != "controller" {
		t.Fatalf("the Deployment's args start with %q, want the controller subcommand", args[0])
	}
	host, port, _ := strings.Cut(strings.TrimPrefix(cp.URL, "https://"), ":")
	logPath := filepath.Join(top, "controller.log")
	lf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(binDir, "trialform"), args...)
	cmd.Env = append(env, "KUBERNETES_SERVICE_HOST="+host, "KUBERNETES_SERVICE_PORT="+port,
		incluster.DirEnv+"="+saDir, "POD_NAME=trialform-controller-0")
	cmd.Stdout, cmd.Stderr = lf, lf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lf.Close()
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			cmd.Process.Kill()
		}
		if t.Failed() {
			b, _ := os.ReadFile(logPath)
			if len(b) > 15000 {
				b = b[len(b)-15000:]
			}
			t.Logf("controller log (tail):\n%s", b)
		}
	})
	logHas := func(s string) bool {
		b, _ := os.ReadFile(logPath)
		return bytes.Contains(b, []byte(s))
	}
	waitFor := func(what string, d time.Duration, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(d)
		for !cond() {
			select {
			case <-done:
				t.Fatalf("the controller exited while waiting for %s", what)
			default:
			}
			if time.Now().After(deadline) {
				t.Fatalf("timed out after %s waiting for %s", d, what)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	status := func(exp string) map[string]int {
		st := loadHAState(t, ns, cp.Kubeconfig, top)
		out := map[string]int{}
		if e := st.Experiment(exp); e != nil {
			for _, tr := range e.Trials {
				out[tr.Status]++
			}
		}
		return out
	}
	waitFor("quick's two trials to succeed and slow's to run", 3*time.Minute, func() bool {
		return status("quick")[state.Succeeded] == 2 && status("slow")[state.Running] == 1
	})

	slowSel := metav1.ListOptions{LabelSelector: k8s.LabelExperiment + "=" + k8s.LabelValue("slow")}

	// Remove "slow": held until approved.
	os.WriteFile(filepath.Join(defsDir, "main.hcl"), []byte(fmt.Sprintf(rbacDefs, ns, "")), 0o644)
	gitRun("-C", repo, "commit", "-q", "-am", "remove slow")
	waitFor("the removal to be held", 2*time.Minute, func() bool { return logHas(`"msg":"held: destructive change waits for approval","experiment":"slow"`) })
	// A laptop with the same definitions (and the admin's kubeconfig)
	// approves through the shared state.
	laptop := filepath.Join(top, "laptop")
	gitRun("clone", "-q", repo, laptop)
	for _, args := range [][]string{{"init"}, {"approve", "-lock-timeout", "2m", "slow"}} {
		tf := exec.Command(filepath.Join(binDir, "trialform"), args...)
		tf.Dir, tf.Env = filepath.Join(laptop, "experiments"), append(env, "KUBECONFIG="+cp.Kubeconfig)
		if out, err := tf.CombinedOutput(); err != nil {
			t.Fatalf("trialform %v on the laptop: %v\n%s", args, err, out)
		}
	}
	// Removing an experiment stops its trials (their pods deleted) and
	// drops it from the state; its Jobs stay, ended (destroy deletes them).
	waitFor("slow's trial to be stopped and slow to leave the state", 2*time.Minute, func() bool {
		pods, err := k.CoreV1().Pods(ns).List(ctx, slowSel)
		return err == nil && len(pods.Items) == 0 && loadHAState(t, ns, cp.Kubeconfig, top).Experiment("slow") == nil
	})
	// A rolling update: SIGTERM, the Lease given up.
	cmd.Process.Signal(os.Interrupt)
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("the controller did not stop within a minute of an interrupt")
	}

	// What the ServiceAccount asked for, and what it was answered.
	granted := map[string]bool{}
	for _, r := range role.Rules {
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				for _, v := range r.Verbs {
					if g == "*" || res == "*" || v == "*" {
						t.Errorf("the Role grants a wildcard (%s %s/%s): name each verb", v, g, res)
					}
					granted[auditKey(v, g, res)] = true
				}
			}
		}
	}
	user := "system:serviceaccount:" + ns + ":" + sa.Name
	used, refused := map[string]int{}, map[string]int{}
	f, err := os.Open(cp.AuditLog)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<22)
	for sc.Scan() {
		var ev struct {
			Stage string `json:"stage"`
			Verb  string `json:"verb"`
			User  struct {
				Username string `json:"username"`
			} `json:"user"`
			ObjectRef *struct {
				Resource    string `json:"resource"`
				Subresource string `json:"subresource"`
				APIGroup    string `json:"apiGroup"`
				Namespace   string `json:"namespace"`
			} `json:"objectRef"`
			ResponseStatus *struct {
				Code int `json:"code"`
			} `json:"responseStatus"`
		}
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("the audit log: %v", err)
		}
		if ev.User.Username != user || ev.Stage != "ResponseComplete" || ev.ObjectRef == nil {
			continue
		}
		res := ev.ObjectRef.Resource
		if ev.ObjectRef.Subresource != "" {
			res += "/" + ev.ObjectRef.Subresource
		}
		key := auditKey(ev.Verb, ev.ObjectRef.APIGroup, res)
		if ev.ResponseStatus != nil && ev.ResponseStatus.Code == 403 {
			refused[key]++
		} else {
			used[key]++
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	// The kubernetes platform checks the namespace exists (a cluster-wide
	// get); refused, it lists the namespace's Jobs instead.
	delete(refused, auditKey("get", "", "namespaces"))
	var lines []string
	for k, n := range used {
		lines = append(lines, fmt.Sprintf("%s ×%d", k, n))
	}
	sort.Strings(lines)
	t.Logf("requests of %s: %s", user, strings.Join(lines, ", "))
	for _, k := range sortedKeys(refused) {
		t.Errorf("the controller was refused %q %d time(s): the Role of examples/controller/rbac.yaml lacks it", k, refused[k])
	}
	// Granted for a path this test does not take, each with its reason.
	notReached := map[string]string{
		auditKey("delete", "batch", "jobs"): "resuming a lost trial whose Job has ended (a new Job of the same name)",
	}
	for _, k := range sortedKeys(granted) {
		if why, ok := notReached[k]; ok && used[k] == 0 {
			t.Logf("%q not used here: it is for %s", k, why)
			continue
		}
		if used[k] == 0 {
			t.Errorf("the Role grants %q but the controller never used it: remove it from examples/controller/rbac.yaml", k)
		}
	}
	for _, k := range sortedKeys(used) {
		if !granted[k] && refused[k] == 0 {
			t.Errorf("the controller did %q without the Role granting it", k)
		}
	}
}

func sortedKeys[V any](m map[string]V) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// waitAllowed waits until the ServiceAccount may do verb on resource (a
// SubjectAccessReview, asked as the admin).
func waitAllowed(ctx context.Context, t *testing.T, cp *k8stest.ControlPlane, ns, sa, verb, group, resource string) {
	t.Helper()
	for {
		r, err := cp.Client.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authzv1.SubjectAccessReview{Spec: authzv1.SubjectAccessReviewSpec{
			User:               "system:serviceaccount:" + ns + ":" + sa,
			Groups:             []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"},
			ResourceAttributes: &authzv1.ResourceAttributes{Namespace: ns, Verb: verb, Group: group, Resource: resource},
		}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if r.Status.Allowed {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s was never allowed to %s %s", sa, verb, resource)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func ptrTo[T any](v T) *T { return &v }
