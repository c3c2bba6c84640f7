package command_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/trialform/trialform/internal/testdeps"
	k8s "github.com/trialform/trialform/providers/kubernetes"
	"github.com/trialform/trialform/providers/kubernetes/k8stest"
)

// TestKubernetesScripts runs testdata/kubernetes/*.txtar against a real
// control plane (scripts/build-k8s.sh builds it; the test skips when it is
// not built) with the test node agent running the pods as local processes.
// Each script gets its own namespace as TRIALFORM_VAR_namespace and the
// control plane's kubeconfig as KUBECONFIG.
func TestKubernetesScripts(t *testing.T) {
	t.Parallel()
	runKubernetesScripts(t, "testdata/kubernetes")
}

// TestKubernetesAPIServerRestart runs the scripts that stop and start
// the apiserver, on a control plane of their own.
//
// It stays serial: restarting an apiserver while the parallel tests load
// the machine failed once in CI (the new apiserver gave up dialling its
// etcd), though the control plane is its own.
func TestKubernetesAPIServerRestart(t *testing.T) {
	runKubernetesScripts(t, "testdata/kubernetes-restart")
}

// startClusterWithNode starts a test control plane and one node agent
// that runs its pods as processes of this machine, both stopped when the
// test ends; a control plane not built fails the test in CI.
func startClusterWithNode(ctx context.Context, t *testing.T, o k8stest.Options) (*k8stest.ControlPlane, *k8stest.NodeAgent) {
	t.Helper()
	cp, err := k8stest.Start(ctx, o)
	if errors.Is(err, k8stest.ErrNotBuilt) {
		testdeps.Require(t, "the test Kubernetes control plane", err.Error())
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cp.Stop)
	agent, err := k8stest.StartNodeAgent(ctx, cp, "agent-0", k8stest.AgentOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(agent.Stop)
	return cp, agent
}

func runKubernetesScripts(t *testing.T, dir string) {
	if testing.Short() {
		t.Skip("end-to-end scripts are not short")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cp, agent := startClusterWithNode(ctx, t, k8stest.Options{CRDs: true})
	// The real Kubeflow training operator, and the stand-in for the
	// operators of adaptdl and frameworkcontroller.
	if err := k8stest.StartTrainingOperator(ctx, cp); err != nil {
		t.Fatal(err)
	}
	operator, err := k8stest.StartOperator(cp)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(operator.Stop)
	dyn, err := dynamic.NewForConfig(cp.Config)
	if err != nil {
		t.Fatal(err)
	}

	nsOf := func(ts *testscript.TestScript) string { return ts.Getenv("TRIALFORM_VAR_namespace") }
	selector := func(ts *testscript.TestScript, exp string) metav1.ListOptions {
		if exp == "" {
			return metav1.ListOptions{LabelSelector: k8s.LabelManagedBy + "=trialform"}
		}
		return metav1.ListOptions{LabelSelector: k8s.LabelExperiment + "=" + k8s.LabelValue(exp)}
	}
	procs := newScriptProcs()
	defer procs.check(t)
	testscript.Run(t, testscript.Params{
		Dir:           dir,
		UpdateScripts: update,
		Condition:     scriptCondition, // [git], [curl]: a missing one fails in CI (testdeps)
		Setup: func(env *testscript.Env) error {
			procs.setup(env)
			env.Setenv("PATH", binDir+":"+env.Getenv("PATH"))
			env.Setenv("NO_COLOR", "1")
			env.Setenv("PYTHONDONTWRITEBYTECODE", "1")
			b := make([]byte, 4)
			rand.Read(b)
			ns := "e2e-" + hex.EncodeToString(b)
			if _, err := cp.Client.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
				return err
			}
			env.Setenv("TRIALFORM_VAR_namespace", ns)
			env.Setenv("KUBECONFIG", cp.Kubeconfig)
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"waitfor":    cmdWaitFor,
			"trialcount": cmdTrialCount,
			"jsonfield":  cmdJSONField,
			"cpexample":  cmdCopyExample,
			"sleep":      cmdSleep,
			"replace":    cmdReplace,
			"waitlog":    cmdWaitLog,
			"waitfile":   cmdWaitFile,
			// k8sapiserver stop|kill|start: stop kube-apiserver (SIGTERM,
			// SIGKILL after 10s), kill it (SIGKILL) or start it again with
			// the same flags, port and etcd.
			"k8sapiserver": func(ts *testscript.TestScript, neg bool, args []string) {
				switch {
				case len(args) == 1 && args[0] == "stop":
					cp.StopComponent("kube-apiserver")
				case len(args) == 1 && args[0] == "kill":
					cp.KillComponent("kube-apiserver")
				case len(args) == 1 && args[0] == "start":
					ts.Check(cp.RestartComponent("kube-apiserver"))
					ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
					defer cancel()
					ts.Check(cp.WaitReady(ctx))
				default:
					ts.Fatalf("usage: k8sapiserver stop|start")
				}
			},
			// k8scrs RESOURCE EXP N: EXP has N custom resources of
			// RESOURCE (tfjobs, pytorchjobs, adaptdljobs, frameworks) not
			// being deleted.
			"k8scrs": func(ts *testscript.TestScript, neg bool, args []string) {
				if len(args) != 3 {
					ts.Fatalf("usage: k8scrs RESOURCE EXP N")
				}
				gvr := crResource(ts, args[0])
				list, err := dyn.Resource(gvr).Namespace(nsOf(ts)).List(context.Background(), selector(ts, args[1]))
				ts.Check(err)
				n := 0
				for _, o := range list.Items {
					if o.GetDeletionTimestamp() == nil {
						n++
					}
				}
				if want, _ := strconv.Atoi(args[2]); (n == want) == neg {
					ts.Fatalf("k8scrs: %s has %d %s, want %s", args[1], n, args[0], args[2])
				}
			},
			// k8sdeletecr RESOURCE EXP TRIAL: delete a trial's custom
			// resource with the API (background propagation), as someone
			// outside trialform would.
			"k8sdeletecr": func(ts *testscript.TestScript, neg bool, args []string) {
				if len(args) != 3 {
					ts.Fatalf("usage: k8sdeletecr RESOURCE EXP TRIAL")
				}
				gvr := crResource(ts, args[0])
				bg := metav1.DeletePropagationBackground
				r := dyn.Resource(gvr).Namespace(nsOf(ts))
				ts.Check(r.Delete(context.Background(), k8s.JobName(args[1], args[2]), metav1.DeleteOptions{PropagationPolicy: &bg}))
				for i := 0; i < 100; i++ {
					if _, err := r.Get(context.Background(), k8s.JobName(args[1], args[2]), metav1.GetOptions{}); err != nil {
						return
					}
					time.Sleep(50 * time.Millisecond)
				}
				ts.Fatalf("k8sdeletecr: still there")
			},
			// k8sjobs EXP N: EXP has N Jobs (not being deleted).
			"k8sjobs": func(ts *testscript.TestScript, neg bool, args []string) {
				if len(args) != 2 {
					ts.Fatalf("usage: k8sjobs EXP N")
				}
				jobs, err := cp.Client.BatchV1().Jobs(nsOf(ts)).List(context.Background(), selector(ts, args[0]))
				ts.Check(err)
				n := 0
				for _, j := range jobs.Items {
					if j.DeletionTimestamp == nil {
						n++
					}
				}
				if want, _ := strconv.Atoi(args[1]); (n == want) == neg {
					ts.Fatalf("k8sjobs: %s has %d jobs, want %s", args[0], n, args[1])
				}
			},
			// k8swaitfor EXP STATUS N TIMEOUT: waitfor, dumping the
			// namespace's Jobs and pods when it times out.
			"k8swaitfor": func(ts *testscript.TestScript, neg bool, args []string) {
				defer func() {
					if r := recover(); r != nil {
						ctx := context.Background()
						jobs, _ := cp.Client.BatchV1().Jobs(nsOf(ts)).List(ctx, metav1.ListOptions{})
						for _, j := range jobs.Items {
							ts.Logf("job %s: %+v", j.Name, j.Status)
						}
						pods, _ := cp.Client.CoreV1().Pods(nsOf(ts)).List(ctx, metav1.ListOptions{})
						for _, p := range pods.Items {
							ts.Logf("pod %s (node %q, deleting %v): %s %+v", p.Name, p.Spec.NodeName, p.DeletionTimestamp, p.Status.Phase, p.Status.ContainerStatuses)
						}
						for _, n := range []string{"kube-controller-manager", "kube-scheduler", "kube-apiserver"} {
							ts.Logf("%s alive %v; log tail:\n%s", n, cp.Alive(n), cp.Log(n))
						}
						ts.Logf("node agent log:\n%s", agent.Log())
						panic(r)
					}
				}()
				cmdWaitFor(ts, neg, args)
			},
			// k8spods EXP N: EXP's pods belong to its N Jobs, at least one
			// each. A Job may have a second pod: Kubernetes' Job controller can
			// start a Job's pod twice in rare cases (its documentation says so
			// for parallelism 1, completions 1, restartPolicy Never), e.g. when
			// the apiserver dies after storing a pod and before answering the
			// controller, which then creates another. trialform creates the
			// Jobs, not the pods, so what it must not do is make a second Job.
			"k8spods": func(ts *testscript.TestScript, neg bool, args []string) {
				if len(args) != 2 {
					ts.Fatalf("usage: k8spods EXP N")
				}
				ctx := context.Background()
				jobs, err := cp.Client.BatchV1().Jobs(nsOf(ts)).List(ctx, selector(ts, args[0]))
				ts.Check(err)
				pods, err := cp.Client.CoreV1().Pods(nsOf(ts)).List(ctx, selector(ts, args[0]))
				ts.Check(err)
				perJob := map[string]int{}
				for _, j := range jobs.Items {
					perJob[string(j.UID)] = 0
				}
				var problems []string
				for _, p := range pods.Items {
					owner := ""
					for _, o := range p.OwnerReferences {
						if o.Kind == "Job" {
							owner = string(o.UID)
						}
					}
					if _, ok := perJob[owner]; !ok {
						problems = append(problems, "pod "+p.Name+" belongs to none of the experiment's Jobs")
						continue
					}
					perJob[owner]++
				}
				for _, j := range jobs.Items {
					switch n := perJob[string(j.UID)]; {
					case n == 0:
						problems = append(problems, "Job "+j.Name+" has no pod")
					case n > 1:
						ts.Logf("Job %s has %d pods (the Job controller started its pod again)", j.Name, n)
					}
				}
				want, _ := strconv.Atoi(args[1])
				ok := len(problems) == 0 && len(jobs.Items) == want
				if ok == neg {
					for _, p := range pods.Items {
						ts.Logf("pod %s (deleting %v): %s %+v", p.Name, p.DeletionTimestamp, p.Status.Phase, p.Status.ContainerStatuses)
					}
					ts.Fatalf("k8spods: %s has %d Jobs (want %s) and %d pods: %v", args[0], len(jobs.Items), args[1], len(pods.Items), problems)
				}
			},
			// k8sactive EXP N: EXP has N Jobs that have not ended.
			"k8sactive": func(ts *testscript.TestScript, neg bool, args []string) {
				if len(args) != 2 {
					ts.Fatalf("usage: k8sactive EXP N")
				}
				jobs, err := cp.Client.BatchV1().Jobs(nsOf(ts)).List(context.Background(), selector(ts, args[0]))
				ts.Check(err)
				n := 0
			jobs:
				for _, j := range jobs.Items {
					for _, c := range j.Status.Conditions {
						if (c.Type == "Complete" || c.Type == "Failed") && c.Status == "True" {
							continue jobs
						}
					}
					if j.DeletionTimestamp == nil {
						n++
					}
				}
				if want, _ := strconv.Atoi(args[1]); (n == want) == neg {
					ts.Fatalf("k8sactive: %s has %d unfinished jobs, want %s", args[0], n, args[1])
				}
			},
			// k8sdeletejob EXP TRIAL: delete a trial's Job with the API
			// (background propagation), as someone outside trialform would.
			"k8sdeletejob": func(ts *testscript.TestScript, neg bool, args []string) {
				if len(args) != 2 {
					ts.Fatalf("usage: k8sdeletejob EXP TRIAL")
				}
				bg := metav1.DeletePropagationBackground
				ts.Check(cp.Client.BatchV1().Jobs(nsOf(ts)).Delete(context.Background(), k8s.JobName(args[0], args[1]), metav1.DeleteOptions{PropagationPolicy: &bg}))
				for i := 0; i < 100; i++ {
					if _, err := cp.Client.BatchV1().Jobs(nsOf(ts)).Get(context.Background(), k8s.JobName(args[0], args[1]), metav1.GetOptions{}); err != nil {
						return
					}
					time.Sleep(50 * time.Millisecond)
				}
				ts.Fatalf("k8sdeletejob: job still there")
			},
			// k8sdeletepod EXP TRIAL: delete the pods of a trial's Job
			// (as a node drain or an eviction does); the Job stays.
			"k8sdeletepod": func(ts *testscript.TestScript, neg bool, args []string) {
				if len(args) != 2 {
					ts.Fatalf("usage: k8sdeletepod EXP TRIAL")
				}
				job, err := cp.Client.BatchV1().Jobs(nsOf(ts)).Get(context.Background(), k8s.JobName(args[0], args[1]), metav1.GetOptions{})
				ts.Check(err)
				sel := metav1.ListOptions{LabelSelector: "batch.kubernetes.io/controller-uid=" + string(job.UID)}
				var pods *corev1.PodList
				for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(100 * time.Millisecond) {
					pods, err = cp.Client.CoreV1().Pods(nsOf(ts)).List(context.Background(), sel)
					ts.Check(err)
					if len(pods.Items) > 0 && pods.Items[0].Status.Phase == corev1.PodRunning {
						break
					}
					if time.Now().After(deadline) {
						ts.Fatalf("k8sdeletepod: the job has no running pod after 60s")
					}
				}
				zero := int64(0)
				for _, p := range pods.Items {
					ts.Check(cp.Client.CoreV1().Pods(nsOf(ts)).Delete(context.Background(), p.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero}))
				}
			},
			// k8sgone: wait (60s) until no Job, pod or ConfigMap with
			// trialform's labels is left in the namespace.
			"k8sgone": func(ts *testscript.TestScript, neg bool, args []string) {
				c := cp.Client
				ns := nsOf(ts)
				var left string
				for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
					jobs, err1 := c.BatchV1().Jobs(ns).List(context.Background(), selector(ts, ""))
					pods, err2 := c.CoreV1().Pods(ns).List(context.Background(), selector(ts, ""))
					cms, err3 := c.CoreV1().ConfigMaps(ns).List(context.Background(), selector(ts, ""))
					if err1 != nil || err2 != nil || err3 != nil {
						continue
					}
					if len(jobs.Items)+len(pods.Items)+len(cms.Items) == 0 {
						return
					}
					left = strconv.Itoa(len(jobs.Items)) + " jobs, " + strconv.Itoa(len(pods.Items)) + " pods, " + strconv.Itoa(len(cms.Items)) + " configmaps"
				}
				ts.Fatalf("k8sgone: still %s", left)
			},
		},
	})
}

// crResource is the custom resource a script names (tfjobs, pytorchjobs,
// adaptdljobs, frameworks).
func crResource(ts *testscript.TestScript, name string) schema.GroupVersionResource {
	for _, g := range []schema.GroupVersionResource{k8stest.TFJobs, k8stest.PyTorchJobs, k8stest.AdaptDLJobs, k8stest.Frameworks} {
		if g.Resource == name {
			return g
		}
	}
	ts.Fatalf("unknown custom resource %q (tfjobs, pytorchjobs, adaptdljobs, frameworks)", name)
	return schema.GroupVersionResource{}
}
