package k8sstate

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/trialform/trialform/providers/kubernetes/k8stest"
	"github.com/trialform/trialform/schema"
	"github.com/trialform/trialform/state"
	"github.com/trialform/trialform/state/backendreg"
	"github.com/trialform/trialform/state/backendtest"
)

// open returns a new client of the state suffix in the test namespace,
// with the admin's credentials.
func open(t *testing.T, suffix string) *Backend {
	t.Helper()
	c := controlPlane(t)
	b, err := New(c.Config, namespace(t, "tfstate"), suffix)
	if err != nil {
		t.Fatal(err)
	}
	b.SetReporter(func(msg string) { t.Log(msg) })
	return b
}

func mustSave(t *testing.T, b *Backend, s *state.State) {
	t.Helper()
	if err := b.Save(s); err != nil {
		t.Fatal(err)
	}
}

func mustLoad(t *testing.T, b *Backend) *state.State {
	t.Helper()
	s, err := b.Load()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// partNames returns the Secrets holding each experiment's parts.
func partNames(t *testing.T, b *Backend) map[string][]string {
	t.Helper()
	idx, _, err := b.readIndex(context.Background())
	if err != nil || idx == nil {
		t.Fatalf("index: %v, %v", idx, err)
	}
	out := map[string][]string{}
	for n, e := range idx.Experiments {
		for k, p := range e.Parts {
			for _, s := range p.Secrets {
				out[n] = append(out[n], k+"="+s)
			}
		}
	}
	return out
}

// A part larger than a Secret holds is split over several, and read back
// whole.
func TestChunkedParts(t *testing.T) {
	old := chunkSize
	chunkSize = 8 << 10
	defer func() { chunkSize = old }()
	suffix := newSuffix()
	b := open(t, suffix)
	s := backendtest.Sample(300)
	// Incompressible parameters: the part is far larger than a chunk.
	for _, tr := range s.Experiments["mnist"].Trials {
		r := make([]byte, 128)
		rand.Read(r)
		tr.Params["noise"] = hex.EncodeToString(r)
	}
	mustSave(t, b, s)
	idx, _, _ := b.readIndex(context.Background())
	p := idx.Experiments["mnist"].Parts["t0"]
	if len(p.Secrets) < 5 {
		t.Fatalf("a part of %d trials is in %d Secret(s), want it chunked", p.Trials, len(p.Secrets))
	}
	got := mustLoad(t, open(t, suffix))
	if len(got.Experiments["mnist"].Trials) != 300 || got.Experiments["mnist"].Trials["t0299"].Params["noise"] != s.Experiments["mnist"].Trials["t0299"].Params["noise"] {
		t.Fatal("the chunked part did not read back")
	}
	// Replaced parts are deleted: only the index's Secrets remain.
	s.Experiments["mnist"].Trials["t0001"].Attempts++
	mustSave(t, b, s)
	list, err := b.c.listSecrets(context.Background(), b.selector(rolePart))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, ps := range partNames(t, b) {
		n += len(ps)
	}
	if len(list.Items) != n {
		t.Fatalf("%d part Secrets, the index names %d: replaced parts were left", len(list.Items), n)
	}
}

// A save writes the parts that changed: a trial changed rewrites its
// bucket, not its experiment's other buckets nor other experiments.
func TestSaveWritesWhatChanged(t *testing.T) {
	b := open(t, newSuffix())
	s := backendtest.Sample(3000) // buckets t0, t1, t2
	mustSave(t, b, s)
	before := partNames(t, b)
	s.Experiments["mnist"].Trials["t2999"].Attempts++
	mustSave(t, b, s)
	after := partNames(t, b)
	if fmt.Sprint(before["cifar"]) != fmt.Sprint(after["cifar"]) {
		t.Fatalf("cifar's parts were rewritten: %v -> %v", before["cifar"], after["cifar"])
	}
	changed := 0
	for i, p := range before["mnist"] {
		if !contains(after["mnist"], p) {
			changed++
			if !strings.HasPrefix(p, "t2=") {
				t.Fatalf("part %s was rewritten (%d of %v)", p, i, after["mnist"])
			}
		}
	}
	if changed != 1 {
		t.Fatalf("%d parts rewritten, want 1 (bucket t2)", changed)
	}
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// Experiment locks: different experiments at once, the same one
// excluded, the whole state excluded by any and excluding all.
func TestExperimentLocks(t *testing.T) {
	ctx := context.Background()
	suffix := newSuffix()
	a, b := open(t, suffix), open(t, suffix)
	la, err := a.LockExperiments(ctx, []string{"mnist"}, "apply", "v", 0)
	if err != nil {
		t.Fatal(err)
	}
	lb, err := b.LockExperiments(ctx, []string{"cifar"}, "apply", "v", 0)
	if err != nil {
		t.Fatalf("a lock on another experiment: %v", err)
	}
	_, err = b.LockExperiments(ctx, []string{"cifar2", "mnist"}, "apply", "v", 0)
	var le *state.LockedError
	if !errors.As(err, &le) || le.Info.ID != la.Info().ID || fmt.Sprint(le.Info.Experiments) != "[mnist]" {
		t.Fatalf("a lock sharing mnist: %v, want mnist's holder", err)
	}
	// All or nothing: cifar2 was given back.
	if l, err := open(t, suffix).LockExperiments(ctx, []string{"cifar2"}, "plan", "v", 0); err != nil {
		t.Fatalf("cifar2 after a failed lock that named it: %v", err)
	} else {
		l.Unlock()
	}
	if _, err := open(t, suffix).Lock(ctx, "destroy", "v", 0); !errors.As(err, &le) || (le.Info.ID != la.Info().ID && le.Info.ID != lb.Info().ID) {
		t.Fatalf("a whole-state lock while experiments are locked: %v", err)
	}
	locks, err := open(t, suffix).CurrentLocks()
	if err != nil || len(locks) != 2 {
		t.Fatalf("CurrentLocks = %+v, %v; want two", locks, err)
	}
	la.Unlock()
	lb.Unlock()
	w, err := a.Lock(ctx, "destroy", "v", 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.LockExperiments(ctx, []string{"mnist"}, "apply", "v", 0); !errors.As(err, &le) || le.Info.ID != w.Info().ID {
		t.Fatalf("an experiment lock under a whole-state lock: %v", err)
	}
	// A waiter gets it when the whole-state lock goes.
	got := make(chan error, 1)
	go func() {
		l, err := b.LockExperiments(ctx, []string{"mnist"}, "apply", "v", time.Minute)
		if err == nil {
			l.Unlock()
		}
		got <- err
	}()
	w.Unlock()
	if err := <-got; err != nil {
		t.Fatal(err)
	}
}

// Two holders of different experiments save at once; each writes its own
// experiment only, and neither's change is lost. A change to an
// experiment not locked is refused.
func TestScopedSaves(t *testing.T) {
	ctx := context.Background()
	suffix := newSuffix()
	mustSave(t, open(t, suffix), backendtest.Sample(5))
	a, b := open(t, suffix), open(t, suffix)
	la, err := a.LockExperiments(ctx, []string{"mnist"}, "apply", "v", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer la.Unlock()
	lb, err := b.LockExperiments(ctx, []string{"cifar"}, "apply", "v", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer lb.Unlock()
	sa, sb := mustLoad(t, a), mustLoad(t, b)
	cifarParts := partNames(t, a)["cifar"]
	errc := make(chan error, 2)
	go func() {
		for i := range 10 {
			sa.Experiments["mnist"].Trials[fmt.Sprintf("a%02d", i)] = backendtest.Trial(100 + i)
			if err := a.Save(sa); err != nil {
				errc <- err
				return
			}
		}
		errc <- nil
	}()
	go func() {
		for i := range 10 {
			sb.Experiments["cifar"].Trials[fmt.Sprintf("b%02d", i)] = backendtest.Trial(200 + i)
			if err := b.Save(sb); err != nil {
				errc <- err
				return
			}
		}
		errc <- nil
	}()
	for range 2 {
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
	}
	got := mustLoad(t, open(t, suffix))
	if n, m := len(got.Experiments["mnist"].Trials), len(got.Experiments["cifar"].Trials); n != 15 || m != 10 {
		t.Fatalf("mnist has %d trials (want 15), cifar %d (want 10): a save was lost", n, m)
	}
	if fmt.Sprint(partNames(t, a)["cifar"]) == fmt.Sprint(cifarParts) {
		t.Fatal("cifar's parts did not change")
	}
	// a holds mnist only: a change to cifar is refused, naming it.
	sa.Experiments["cifar"].Paused = true
	if err := a.Save(sa); err == nil || !strings.Contains(err.Error(), `"cifar"`) {
		t.Fatalf("a change to an experiment not locked: %v", err)
	}
}

// A Lease its holder stopped renewing still holds the lock; the error
// says it is stale and how to force-unlock it.
func TestStaleLease(t *testing.T) {
	ctx := context.Background()
	suffix := newSuffix()
	a := open(t, suffix)
	l, err := a.Lock(ctx, "apply", "v", 0)
	if err != nil {
		t.Fatal(err)
	}
	// The holder dies: no more renewals (its Lease stays), and its last
	// renewal was long ago.
	h := a.held.locks[0]
	close(h.stop)
	<-h.done
	admin := controlPlane(t).Client.CoordinationV1().Leases("tfstate")
	lease, err := admin.Get(ctx, a.stateLease(), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	past := metav1.NewMicroTime(time.Now().Add(-time.Hour))
	lease.Spec.RenewTime = &past
	if _, err := admin.Update(ctx, lease, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	b := open(t, suffix)
	_, err = b.Lock(ctx, "plan", "v", 0)
	var se *StaleLockError
	if !errors.As(err, &se) || !strings.Contains(err.Error(), "stale") || !strings.Contains(err.Error(), "trialform force-unlock "+l.Info().ID) {
		t.Fatalf("a stale lock: %v, want a StaleLockError naming force-unlock", err)
	}
	var le *state.LockedError
	if !errors.As(err, &le) || le.Info.ID != l.Info().ID {
		t.Fatalf("a stale lock does not name its holder: %v", err)
	}
	if err := b.ForceUnlock(l.Info().ID); err != nil {
		t.Fatal(err)
	}
	l2, err := b.Lock(ctx, "plan", "v", 0)
	if err != nil {
		t.Fatal(err)
	}
	l2.Unlock()
}

// A held lock is renewed: its renewTime moves on while held.
func TestLeaseRenewed(t *testing.T) {
	ctx := context.Background()
	a := open(t, newSuffix())
	a.leaseDuration = 2 * time.Second // renewed every 500ms
	l, err := a.LockExperiments(ctx, []string{"mnist"}, "apply", "v", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Unlock()
	admin := controlPlane(t).Client.CoordinationV1().Leases("tfstate")
	first, err := admin.Get(ctx, a.expLease("mnist"), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := admin.Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + first.Name, ResourceVersion: first.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	for ev := range w.ResultChan() {
		if ev.Type == "MODIFIED" {
			return // renewed
		}
	}
	t.Fatal("the watch ended before the Lease was renewed")
}

// A Secret deleted behind trialform's back is reported, not silently
// written over.
func TestDeletedSecretReported(t *testing.T) {
	suffix := newSuffix()
	b := open(t, suffix)
	s := backendtest.Sample(5)
	mustSave(t, b, s)
	admin := controlPlane(t).Client.CoreV1().Secrets("tfstate")
	ctx := context.Background()
	part := partNames(t, b)["mnist"]
	var victim string
	for _, p := range part {
		if strings.HasPrefix(p, "t0=") {
			victim = strings.TrimPrefix(p, "t0=")
		}
	}
	if err := admin.Delete(ctx, victim, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	c := open(t, suffix)
	_, err := c.Load()
	if err == nil || !strings.Contains(err.Error(), victim) || !strings.Contains(err.Error(), "deleted outside trialform") {
		t.Fatalf("load with a part deleted: %v", err)
	}
	s2 := s.Clone()
	s2.Experiments["cifar"].Paused = true
	if err := c.Save(s2); err == nil {
		t.Fatal("a save over a state with a part deleted succeeded")
	}
	// The index deleted: a client that had loaded the state does not
	// start a new one over it.
	if err := admin.Delete(ctx, "trialform-state-"+suffix, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	s.Experiments["cifar"].Paused = true
	if err := b.Save(s); err == nil || !strings.Contains(err.Error(), "deleted") {
		t.Fatalf("a save after the index was deleted: %v", err)
	}
	if ok, _ := open(t, suffix).Exists(); ok {
		t.Fatal("the save wrote a new index over the deleted one")
	}
	ls, err := open(t, suffix).Lost()
	if err != nil || ls == nil || !strings.Contains(ls.String(), "mnist") {
		t.Fatalf("Lost = %v, %v; want the parts left", ls, err)
	}
}

// Another process's save is announced by Changes.
func TestChanges(t *testing.T) {
	suffix := newSuffix()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w := open(t, suffix)
	ch, err := w.Changes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	mustSave(t, open(t, suffix), backendtest.Sample(2))
	<-ch
	if err := open(t, suffix).AppendMetrics("mnist", "t0000", []state.MetricPoint{{Type: "PERIODICAL", Sequence: 0, Value: []byte("1")}}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ch:
	case <-ctx.Done():
	}
	cancel()
	for range ch {
	}
}

// The apiserver goes away in the middle of a save: the save is reported,
// retried, and done when it is back; the state is whole.
func TestApiserverDown(t *testing.T) {
	c := controlPlane(t)
	suffix := newSuffix()
	b := open(t, suffix)
	reports := make(chan string, 10)
	b.SetReporter(func(msg string) { reports <- msg })
	s := backendtest.Sample(10)
	mustSave(t, b, s)
	l, err := b.LockExperiments(context.Background(), []string{"mnist"}, "apply", "v", 0)
	if err != nil {
		t.Fatal(err)
	}
	wctx, wcancel := context.WithCancel(context.Background())
	defer wcancel()
	watcher := open(t, suffix)
	watcher.SetReporter(func(string) {})
	changes, err := watcher.Changes(wctx)
	if err != nil {
		t.Fatal(err)
	}
	c.StopComponent("kube-apiserver")
	done := make(chan error, 1)
	go func() {
		s.Experiments["mnist"].Trials["t0003"].Attempts++
		done <- b.Save(s)
	}()
	msg := <-reports
	if !strings.Contains(msg, "cannot be reached") || !strings.Contains(msg, "retrying") {
		t.Fatalf("report %q", msg)
	}
	if err := c.RestartComponent("kube-apiserver"); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("the save across the outage: %v", err)
	}
	if msg := <-reports; !strings.Contains(msg, "is back") {
		t.Fatalf("report %q", msg)
	}
	got := mustLoad(t, open(t, suffix))
	if got.Experiments["mnist"].Trials["t0003"].Attempts != 2 || got.Serial != s.Serial {
		t.Fatalf("after the outage: attempts %d serial %d, want 2 and %d", got.Experiments["mnist"].Trials["t0003"].Attempts, got.Serial, s.Serial)
	}
	// The watch was started again: a save after the outage is announced.
	for len(changes) > 0 {
		<-changes
	}
	s.Experiments["mnist"].Trials["t0004"].Attempts++
	mustSave(t, b, s)
	if _, ok := <-changes; !ok {
		t.Fatal("Changes ended with the outage")
	}
	// The lock was held throughout.
	if cur, err := open(t, suffix).CurrentLocks(); err != nil || len(cur) != 1 || cur[0].ID != l.Info().ID {
		t.Fatalf("after the outage the locks are %+v, %v", cur, err)
	}
	if err := l.Unlock(); err != nil {
		t.Fatal(err)
	}
}

// The backend links no all-groups clientset or scheme (issue 30 removes
// them from the binary).
func TestNoClientset(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v: %s", err, out)
	}
	for _, l := range strings.Split(string(out), "\n") {
		if l == "k8s.io/client-go/kubernetes" || strings.HasPrefix(l, "k8s.io/client-go/kubernetes/") {
			t.Errorf("state/kubernetes imports %s", l)
		}
	}
}

// Opened as a configuration opens it: the kubeconfig from $KUBECONFIG,
// the namespace from its context.
func TestOpenFromKubeconfig(t *testing.T) {
	c := controlPlane(t)
	ns := namespace(t, "tfstate-kc")
	dir := t.TempDir()
	kc := filepath.Join(dir, "kc.yaml")
	if err := os.WriteFile(kc, []byte(k8stest.KubeconfigYAML(c.URL, c.CACert, c.Token, ns)), 0o600); err != nil {
		t.Fatal(err)
	}
	env := backendreg.Env{StateDir: filepath.Join(dir, ".trialform"), Getenv: func(k string) string {
		if k == "KUBECONFIG" {
			return kc
		}
		return ""
	}}
	kind := Registration()
	cfg := kind.Config().(*Settings)
	cfg.SecretSuffix = newSuffix()
	b, err := kind.Open(cfg, env)
	if err != nil {
		t.Fatal(err)
	}
	if b.(*Backend).Namespace() != ns || !strings.Contains(b.Location(), ns+"/trialform-state-"+cfg.SecretSuffix) {
		t.Fatalf("opened %s, want namespace %s", b.Location(), ns)
	}
	s := backendtest.Sample(1)
	if err := b.Save(s); err != nil {
		t.Fatal(err)
	}
	// config_path relative to the configuration directory wins.
	cfg2 := &Settings{ConfigPath: "kc.yaml", SecretSuffix: cfg.SecretSuffix}
	b2, err := Open(*cfg2, backendreg.Env{StateDir: env.StateDir, Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := b2.Load(); err != nil || got.Serial != 1 {
		t.Fatalf("load through config_path: %v, %v", got, err)
	}
	// Bad settings: clear errors, no credential in them.
	for _, bad := range []Settings{{ConfigPath: "nope.yaml"}, {ConfigPath: "kc.yaml", Context: "other"}, {SecretSuffix: "Bad_Suffix"}} {
		_, err := Open(bad, backendreg.Env{StateDir: env.StateDir, Getenv: func(string) string { return "" }})
		if err == nil {
			t.Fatalf("%+v opened", bad)
		}
		if strings.Contains(err.Error(), c.Token) {
			t.Fatalf("the error shows the token: %v", err)
		}
		t.Log(err)
	}
}

// A backend block's settings are checked where they are written.
func TestSettingsChecked(t *testing.T) {
	kind := Registration()
	sk := []schema.BackendKind{{Name: kind.Name, Summary: kind.Summary, Config: kind.Config}}
	for _, tt := range []struct{ body, want string }{
		{`secret_suffix = "Bad_Suffix"`, `main.hcl:2,19-31: Invalid secret_suffix: secret_suffix = "Bad_Suffix": use at most 40 lowercase letters`},
		{"in_cluster = true\n  config_path = \"kc\"", `main.hcl:3,17-21: Conflicting settings: in_cluster = true uses the pod's service account: remove config_path, or in_cluster.`},
		{`namespace = "team-a"`, ""},
	} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "main.hcl"), []byte("backend \"kubernetes\" {\n  "+tt.body+"\n}\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		be, _, diags := schema.LoadBackend(dir, schema.LoadOptions{Backends: sk})
		got := ""
		for _, d := range diags {
			got += fmt.Sprintf("%s:%d,%d-%d: %s: %s\n", filepath.Base(d.Subject.Filename), d.Subject.Start.Line, d.Subject.Start.Column, d.Subject.End.Column, d.Summary, d.Detail)
		}
		if tt.want == "" {
			if got != "" || be == nil || be.Config.(*Settings).Namespace != "team-a" {
				t.Fatalf("%s: %v %s", tt.body, be, got)
			}
			continue
		}
		if !strings.Contains(got, tt.want) {
			t.Errorf("%s: diagnostics\n%s\nwant %q", tt.body, got, tt.want)
		}
	}
}

// The stamps change with what they stamp, and are read without the
// Secrets' data (the apiserver answers PartialObjectMetadata).
func TestStamps(t *testing.T) {
	suffix := newSuffix()
	b := open(t, suffix)
	st0, err := b.StateStamp()
	if err != nil || st0.State != "" {
		t.Fatalf("no state: stamp %+v, %v", st0, err)
	}
	s := backendtest.Sample(2)
	mustSave(t, b, s)
	st1, _ := b.StateStamp()
	if again, _ := open(t, suffix).StateStamp(); st1.State == "" || again != st1 || st1.Written.IsZero() {
		t.Fatalf("stamps %+v and %+v of one state", st1, again)
	}
	s.Experiments["mnist"].Paused = true
	mustSave(t, b, s)
	if st2, _ := b.StateStamp(); st2.State == st1.State {
		t.Fatal("a save did not change the stamp")
	}
	if err := b.MarkRefreshed(s.Lineage, []string{"mnist"}, time.Now()); err != nil {
		t.Fatal(err)
	}
	if st3, _ := b.StateStamp(); st3.Refreshed == "" {
		t.Fatal("a mark did not change the stamp")
	}
	if m, err := b.MetricsStamp("mnist", "t0000"); err != nil || m != "" {
		t.Fatalf("no series: stamp %q, %v", m, err)
	}
	pt := []state.MetricPoint{{Type: "PERIODICAL", Value: []byte("1")}}
	if err := b.AppendMetrics("mnist", "t0000", pt); err != nil {
		t.Fatal(err)
	}
	m1, _ := b.MetricsStamp("mnist", "t0000")
	pt[0].Sequence = 1
	if err := b.AppendMetrics("mnist", "t0000", pt); err != nil {
		t.Fatal(err)
	}
	if m2, _ := b.MetricsStamp("mnist", "t0000"); m1 == "" || m2 == m1 {
		t.Fatalf("an append: stamp %q -> %q", m1, m2)
	}
	raw, err := b.c.core.Get().Namespace(b.ns).Resource("secrets").Name(b.indexName()).SetHeader("Accept", metaAccept).DoRaw(context.Background())
	if err != nil || !strings.Contains(string(raw), `"kind":"PartialObjectMetadata"`) || strings.Contains(string(raw), `"data":`) {
		t.Fatalf("a metadata read answered %.300s, %v", raw, err)
	}
}

// Replace writes a state as it is, its lineage and serial included, over
// one of another lineage and a higher serial, and leaves no old part.
func TestReplace(t *testing.T) {
	suffix := newSuffix()
	b := open(t, suffix)
	old := backendtest.Sample(30)
	for range 5 {
		old.Experiments["mnist"].Paused = !old.Experiments["mnist"].Paused
		mustSave(t, b, old)
	}
	s := backendtest.Sample(3)
	s.Serial = 2
	if err := open(t, suffix).Replace(s); err != nil {
		t.Fatal(err)
	}
	got := mustLoad(t, open(t, suffix))
	if got.Lineage != s.Lineage || got.Serial != 2 || len(got.Experiments["mnist"].Trials) != 3 {
		t.Fatalf("after Replace: lineage %s serial %d, %d trials; want %s, 2, 3", got.Lineage, got.Serial, len(got.Experiments["mnist"].Trials), s.Lineage)
	}
	list, err := b.c.listSecretsMeta(context.Background(), b.selector(rolePart))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, ps := range partNames(t, b) {
		n += len(ps)
	}
	if len(list.Items) != n {
		t.Fatalf("%d part Secrets, the index names %d: the replaced state's parts were left", len(list.Items), n)
	}
	// A save goes on from it.
	got.Experiments["cifar"].Paused = true
	mustSave(t, open(t, suffix), got)
	if got.Serial != 3 {
		t.Fatalf("serial %d after a save, want 3", got.Serial)
	}
}

// A save that died after writing its parts and before the index (or
// before deleting the replaced parts) leaves Secrets no index names: the
// state reads whole, and the next lock of their experiment deletes them,
// not another experiment's.
func TestOrphanPartsCollected(t *testing.T) {
	ctx := context.Background()
	suffix := newSuffix()
	b := open(t, suffix)
	s := backendtest.Sample(3)
	mustSave(t, b, s)
	orphans := map[string][]string{}
	for _, e := range []string{"mnist", "cifar"} {
		names, err := b.writePart(ctx, e, "t0", []byte(`{}`))
		if err != nil {
			t.Fatal(err)
		}
		orphans[e] = names
	}
	got := mustLoad(t, open(t, suffix))
	if len(got.Experiments["mnist"].Trials) != 3 {
		t.Fatal("orphan parts changed what is read")
	}
	exists := func(name string) bool {
		_, err := b.c.getSecretMeta(ctx, name)
		return err == nil
	}
	lk, err := open(t, suffix).LockExperiments(ctx, []string{"mnist"}, "apply", "v", 0)
	if err != nil {
		t.Fatal(err)
	}
	lk.Unlock()
	if exists(orphans["mnist"][0]) {
		t.Fatal("mnist's orphan part survived a lock of mnist")
	}
	if !exists(orphans["cifar"][0]) {
		t.Fatal("a lock of mnist deleted a part of cifar (another holder's save may be under way)")
	}
	lk, err = open(t, suffix).Lock(ctx, "apply", "v", 0)
	if err != nil {
		t.Fatal(err)
	}
	lk.Unlock()
	if exists(orphans["cifar"][0]) {
		t.Fatal("cifar's orphan part survived a whole-state lock")
	}
	if got := mustLoad(t, open(t, suffix)); len(got.Experiments["mnist"].Trials) != 3 {
		t.Fatal("the collection removed a part in use")
	}
}

// The conflict check of an experiment lock is the experiment's own: a
// holder whose experiment someone else wrote since it loaded it (here a
// command that took no lock) is refused, naming it; others' saves of
// other experiments are not conflicts (TestScopedSaves). (A holder whose
// lock was forced away is refused before that: TestForceUnlockedHolderIsRefused.)
func TestExperimentConflict(t *testing.T) {
	ctx := context.Background()
	suffix := newSuffix()
	mustSave(t, open(t, suffix), backendtest.Sample(3))
	a := open(t, suffix)
	la, err := a.LockExperiments(ctx, []string{"mnist"}, "apply", "v", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer la.Unlock()
	sa := mustLoad(t, a)
	b := open(t, suffix)
	sb := mustLoad(t, b)
	sb.Experiments["mnist"].Trials["t0000"].Attempts = 7
	mustSave(t, b, sb)
	sa.Experiments["mnist"].Trials["t0001"].Attempts = 9
	err = a.Save(sa)
	var ce *state.ConflictError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), `experiment "mnist" was changed by someone else`) {
		t.Fatalf("a save over an experiment written since it was loaded: %v", err)
	}
	if got := mustLoad(t, open(t, suffix)); got.Experiments["mnist"].Trials["t0000"].Attempts != 7 || got.Experiments["mnist"].Trials["t0001"].Attempts == 9 {
		t.Fatal("the refused save wrote over the other's change")
	}
}

// Changes watches metadata only: an append to a series does not send
// the series to every watcher.
func TestChangesWatchMetadataOnly(t *testing.T) {
	b := open(t, newSuffix())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rv, err := b.listRV(ctx)
	if err != nil {
		t.Fatal(err)
	}
	w, err := b.watch(ctx, rv)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if err := b.AppendMetrics("mnist", "t0000", []state.MetricPoint{{Type: "PERIODICAL", Value: []byte("1")}}); err != nil {
		t.Fatal(err)
	}
	for ev := range w.ResultChan() {
		if ev.Type == "BOOKMARK" {
			continue
		}
		if _, ok := ev.Object.(*metav1.PartialObjectMetadata); !ok {
			t.Fatalf("the watch sent a %T, want metadata only", ev.Object)
		}
		return
	}
	t.Fatal("the watch ended without an event")
}

// TestLockWaitOutlivesAnApiserverRestart: B waits for an experiment A
// holds (-lock-timeout) and the apiserver restarts during the wait. B's
// calls are retried (the apiserver is said to be unreachable, then back),
// A's Lease, kept in etcd, holds through the restart, and B gets the lock
// when A releases it.
func TestLockWaitOutlivesAnApiserverRestart(t *testing.T) {
	c := controlPlane(t)
	suffix := newSuffix()
	a, b := open(t, suffix), open(t, suffix)
	reports := make(chan string, 10)
	b.SetReporter(func(msg string) { reports <- msg })
	mustSave(t, a, backendtest.Sample(3))
	l, err := a.LockExperiments(context.Background(), []string{"mnist"}, "apply", "v", 0)
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		l   *state.Lock
		err error
	}
	got := make(chan result, 1)
	go func() {
		l, err := b.LockExperiments(context.Background(), []string{"mnist"}, "apply", "v", 5*time.Minute)
		got <- result{l, err}
	}()
	c.StopComponent("kube-apiserver")
	select {
	case msg := <-reports:
		if !strings.Contains(msg, "cannot be reached") || !strings.Contains(msg, "retrying") {
			t.Errorf("report %q", msg)
		}
	case r := <-got:
		c.RestartComponent("kube-apiserver")
		t.Fatalf("the lock wait ended when the apiserver went away: %v, %v", r.l, r.err)
	}
	if err := c.RestartComponent("kube-apiserver"); err != nil {
		t.Fatal(err)
	}
	if msg := <-reports; !strings.Contains(msg, "is back") {
		t.Errorf("report %q", msg)
	}
	// A holds its lock still, and B waits.
	if cur, err := open(t, suffix).CurrentLocks(); err != nil || len(cur) != 1 || cur[0].ID != l.Info().ID {
		t.Fatalf("after the restart the locks are %+v, %v", cur, err)
	}
	select {
	case r := <-got:
		t.Fatalf("B took the lock A holds: %v, %v", r.l, r.err)
	default:
	}
	if err := l.Unlock(); err != nil {
		t.Fatal(err)
	}
	r := <-got
	if r.err != nil {
		t.Fatalf("B, once A released the lock: %v", r.err)
	}
	r.l.Unlock()
}

// TestLockWaitHonoursAShortTimeoutWhileTheApiserverIsDown: B waits for
// an experiment A holds with -lock-timeout=3s and the apiserver goes
// away. Each call of the wait was retried for up to 2 minutes, so B
// waited ~2 minutes past its 3 s and then failed with the outage alone,
// naming nobody. Now the wait ends at its timeout, naming A and saying
// the apiserver could not be reached; a wait that never reached the
// apiserver says who holds the lock is not known.
func TestLockWaitHonoursAShortTimeoutWhileTheApiserverIsDown(t *testing.T) {
	c := controlPlane(t)
	suffix := newSuffix()
	a, b, other := open(t, suffix), open(t, suffix), open(t, suffix)
	var mu sync.Mutex
	var reports []string
	b.SetReporter(func(msg string) { mu.Lock(); reports = append(reports, msg); mu.Unlock() })
	mustSave(t, a, backendtest.Sample(3))
	l, err := a.LockExperiments(context.Background(), []string{"mnist"}, "apply", "v", 0)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() {
		_, err := b.LockExperiments(context.Background(), []string{"mnist"}, "apply", "v", 3*time.Second)
		got <- err
	}()
	for b.waiting.Load() == nil {
		time.Sleep(20 * time.Millisecond)
	}
	c.StopComponent("kube-apiserver")
	defer func() {
		if err := c.RestartComponent("kube-apiserver"); err != nil {
			t.Fatal(err)
		}
		l.Unlock()
	}()
	select {
	case err = <-got:
	case <-time.After(90 * time.Second): // far past 3 s, short of the 2 min of one call's retries
		t.Fatal("a lock wait of 3 s still waits 90 s later while the apiserver is down")
	}
	t.Logf("the wait ran out: %v", err)
	for _, want := range []string{"gave up after waiting 3s", l.Info().ID, "could not be reached"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("the wait that ran out while the apiserver was down: %v, without %q", err, want)
		}
	}
	mu.Lock()
	n := 0
	for _, r := range reports {
		if strings.Contains(r, "cannot be reached") {
			n++
		}
	}
	mu.Unlock()
	if n != 1 {
		t.Errorf("B said %d times that the apiserver cannot be reached, want once: %q", n, reports)
	}
	_, err = other.LockExperiments(context.Background(), []string{"mnist"}, "apply", "v", time.Second)
	for _, want := range []string{"gave up", "could not be reached", "who holds the lock is not known"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("the wait that never reached the apiserver: %v, without %q", err, want)
		}
	}
}

// TestLockWaitOutlivesAnOutageLongerThanACall: a wait with a long
// -lock-timeout goes on through an outage longer than one call's retries
// (2 minutes; 1 s here): it ended with the outage though the person asked
// to wait longer. B says once that the apiserver cannot be reached, once
// that it is back, and gets the lock when A releases it.
func TestLockWaitOutlivesAnOutageLongerThanACall(t *testing.T) {
	c := controlPlane(t)
	suffix := newSuffix()
	a, b := open(t, suffix), open(t, suffix)
	b.c.retryFor = time.Second
	reports := make(chan string, 100)
	b.SetReporter(func(msg string) { reports <- msg })
	mustSave(t, a, backendtest.Sample(3))
	l, err := a.LockExperiments(context.Background(), []string{"mnist"}, "apply", "v", 0)
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		l   *state.Lock
		err error
	}
	got := make(chan result, 1)
	go func() {
		l, err := b.LockExperiments(context.Background(), []string{"mnist"}, "apply", "v", 10*time.Minute)
		got <- result{l, err}
	}()
	for b.waiting.Load() == nil {
		time.Sleep(20 * time.Millisecond)
	}
	c.StopComponent("kube-apiserver")
	msg := <-reports
	if !strings.Contains(msg, "cannot be reached") {
		t.Errorf("report %q", msg)
	}
	time.Sleep(4 * time.Second) // an outage longer than a call's retries
	restarted := false
	select {
	case r := <-got:
		restarted = c.RestartComponent("kube-apiserver") == nil
		t.Errorf("the 10 min lock wait ended in an outage longer than one call's retries: %v, %v", r.l, r.err)
	default:
	}
	if !restarted {
		if err := c.RestartComponent("kube-apiserver"); err != nil {
			t.Fatal(err)
		}
	}
	if t.Failed() {
		l.Unlock()
		return
	}
	if msg := <-reports; !strings.Contains(msg, "is back") {
		t.Errorf("report %q, want it back", msg)
	}
	if err := l.Unlock(); err != nil {
		t.Fatal(err)
	}
	r := <-got
	if r.err != nil {
		t.Fatalf("B, once A released the lock: %v", r.err)
	}
	r.l.Unlock()
	close(reports)
	for msg := range reports {
		if strings.Contains(msg, "cannot be reached") || strings.Contains(msg, "is back") {
			t.Errorf("said again: %q", msg)
		}
	}
}

// A holder whose Leases someone deleted with force-unlock while it ran
// is refused, for good, whatever it writes of what it locked: a save
// (checked against the Leases as it saves, before its renewal noticed),
// metric points, and a Replace under a whole-state lock (noticed by its
// renewal); it says so once, and a later save is refused too, naming
// who holds the lock now.
func TestForceUnlockedHolderIsRefused(t *testing.T) {
	ctx := context.Background()
	pts := []state.MetricPoint{{Type: "FINAL", Value: []byte("1"), Time: time.Now()}}
	t.Run("save", func(t *testing.T) {
		suffix := newSuffix()
		mustSave(t, open(t, suffix), backendtest.Sample(3))
		a := open(t, suffix)
		var mu sync.Mutex
		var told []string
		a.SetReporter(func(msg string) { mu.Lock(); told = append(told, msg); mu.Unlock() })
		la, err := a.LockExperiments(ctx, []string{"mnist"}, "apply", "v", 0)
		if err != nil {
			t.Fatal(err)
		}
		defer la.Unlock()
		sa := mustLoad(t, a)
		b := open(t, suffix)
		if err := b.ForceUnlock(la.Info().ID); err != nil {
			t.Fatal(err)
		}
		sa.Experiments["mnist"].Trials["t0001"].Attempts = 9
		err = a.Save(sa)
		if err == nil || !strings.Contains(err.Error(), "someone released it with force-unlock; not writing") || !strings.Contains(err.Error(), la.Info().ID) {
			t.Fatalf("the save of a force-unlocked holder: %v, want it refused naming force-unlock", err)
		}
		if err := a.AppendMetrics("mnist", "t0001", pts); err == nil || !strings.Contains(err.Error(), "someone released it with force-unlock; not writing") {
			t.Fatalf("metric points of a force-unlocked holder: %v, want them refused", err)
		}
		if got, err := a.ReadMetrics("mnist", "t0001"); err != nil || len(got) != 0 {
			t.Fatalf("the refused points: %v, %v", got, err)
		}
		// Someone takes the lock: still refused, naming them.
		lb, err := b.LockExperiments(ctx, []string{"mnist"}, "apply", "v", 0)
		if err != nil {
			t.Fatal(err)
		}
		defer lb.Unlock()
		err = a.Save(sa)
		if err == nil || !strings.Contains(err.Error(), "someone released it with force-unlock; not writing") || !strings.Contains(err.Error(), lb.Info().ID) {
			t.Fatalf("the next save of a force-unlocked holder: %v, want it refused naming the holder now", err)
		}
		if got := mustLoad(t, open(t, suffix)); got.Experiments["mnist"].Trials["t0001"].Attempts == 9 {
			t.Fatal("the refused save was written")
		}
		mu.Lock()
		defer mu.Unlock()
		n := 0
		for _, m := range told {
			if strings.Contains(m, "was released by someone else (force-unlock?)") {
				n++
			}
		}
		if n != 1 {
			t.Fatalf("the holder was told %d times, want once: %q", n, told)
		}
	})
	t.Run("replace", func(t *testing.T) {
		suffix := newSuffix()
		mustSave(t, open(t, suffix), backendtest.Sample(3))
		a := open(t, suffix)
		a.leaseDuration = time.Second // renewed every 250ms
		told := make(chan string, 100)
		a.SetReporter(func(msg string) { told <- msg })
		la, err := a.Lock(ctx, "state push", "v", 0)
		if err != nil {
			t.Fatal(err)
		}
		defer la.Unlock()
		sa := mustLoad(t, a)
		if err := open(t, suffix).ForceUnlock(la.Info().ID); err != nil {
			t.Fatal(err)
		}
		// The renewal notices.
		for msg := range told {
			if strings.Contains(msg, "was released by someone else (force-unlock?)") {
				break
			}
		}
		if err := a.AppendMetrics("mnist", "t0001", pts); err == nil || !strings.Contains(err.Error(), "someone released it with force-unlock; not writing") {
			t.Fatalf("metric points of a force-unlocked holder: %v, want them refused", err)
		}
		sa.Serial += 10
		err = a.Replace(sa)
		if err == nil || !strings.Contains(err.Error(), "replace state") || !strings.Contains(err.Error(), "someone released it with force-unlock; not writing") {
			t.Fatalf("a Replace by a force-unlocked holder: %v, want it refused naming force-unlock", err)
		}
		if got := mustLoad(t, open(t, suffix)); got.Serial == sa.Serial {
			t.Fatal("the refused Replace was written")
		}
	})
}

// A force-unlock of a live holder whose renewal lands between the
// force-unlock's listing of the Leases and its delete still releases the
// lock: it failed with the apiserver's conflict ("the object might have
// been modified"), as a loaded run of TestForceUnlockedHolderIsRefused
// did when the holder renewed every 250 ms. The hook renews the Lease as
// its holder does, at that moment.
func TestForceUnlockDuringARenewal(t *testing.T) {
	c := controlPlane(t)
	ctx := context.Background()
	suffix := newSuffix()
	mustSave(t, open(t, suffix), backendtest.Sample(3))
	a := open(t, suffix)
	la, err := a.LockExperiments(ctx, []string{"mnist"}, "apply", "v", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer la.Unlock()
	sa := mustLoad(t, a)
	admin := c.Client.CoordinationV1().Leases("tfstate")
	name := a.expLease("mnist")
	renewals := 0
	testForceUnlockListed = func() {
		l, err := admin.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Errorf("the holder's Lease: %v", err)
			return
		}
		now := metav1.NewMicroTime(time.Now())
		l.Spec.RenewTime = &now
		if _, err := admin.Update(ctx, l, metav1.UpdateOptions{}); err != nil {
			t.Errorf("renew the holder's Lease: %v", err)
		}
		renewals++
	}
	defer func() { testForceUnlockListed = nil }()
	if err := open(t, suffix).ForceUnlock(la.Info().ID); err != nil {
		t.Fatalf("force-unlock while its holder renews: %v", err)
	}
	if renewals != 1 {
		t.Fatalf("renewed %d times between the listing and the delete, want once", renewals)
	}
	if _, err := admin.Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the Lease after force-unlock: %v, want it gone", err)
	}
	sa.Experiments["mnist"].Trials["t0001"].Attempts = 9
	if err := a.Save(sa); err == nil || !strings.Contains(err.Error(), "someone released it with force-unlock; not writing") {
		t.Fatalf("the save of the force-unlocked holder: %v, want it refused", err)
	}
}

// A holder whose Lease went stale while the apiserver was down, and
// which renewed it itself once it was back, still holds its lock: its
// saves and metric points go in (a stale Lease is not a force-unlock).
func TestLeaseStaleInAnOutageStaysTheHolders(t *testing.T) {
	c := controlPlane(t)
	ctx := context.Background()
	suffix := newSuffix()
	mustSave(t, open(t, suffix), backendtest.Sample(3))
	a := open(t, suffix)
	a.leaseDuration = time.Second // renewed every 250ms
	la, err := a.LockExperiments(ctx, []string{"mnist"}, "apply", "v", 0)
	if err != nil {
		t.Fatal(err)
	}
	sa := mustLoad(t, a)
	admin := c.Client.CoordinationV1().Leases("tfstate")
	before, err := admin.Get(ctx, a.expLease("mnist"), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c.StopComponent("kube-apiserver")
	time.Sleep(3 * time.Second) // past the Lease's 1 s: stale
	if err := c.RestartComponent("kube-apiserver"); err != nil {
		t.Fatal(err)
	}
	// Stale, then renewed by its holder (the admin's reads fail until
	// the apiserver is ready).
	for {
		cur, err := admin.Get(ctx, a.expLease("mnist"), metav1.GetOptions{})
		if err == nil && cur.ResourceVersion != before.ResourceVersion && cur.Spec.RenewTime.Sub(before.Spec.RenewTime.Time) > 2*time.Second {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	sa.Experiments["mnist"].Trials["t0001"].Attempts = 9
	mustSave(t, a, sa)
	if err := a.AppendMetrics("mnist", "t0001", []state.MetricPoint{{Type: "FINAL", Value: []byte("1"), Time: time.Now()}}); err != nil {
		t.Fatal(err)
	}
	if err := la.Unlock(); err != nil {
		t.Fatal(err)
	}
	if got := mustLoad(t, open(t, suffix)); got.Experiments["mnist"].Trials["t0001"].Attempts != 9 {
		t.Fatal("the save after the outage was not written")
	}
}

// A lock force-unlocked between its holder's check of it and its write of
// the index (a Lease and a Secret: the check and the write are two
// requests): the write fails, as the force-unlock changed the index the
// write is conditional on, and the holder, checking its locks again before
// it tries once more, is refused. Before, the former holder's save was
// written after the force-unlock had returned. A person's write after the
// force-unlock is never overwritten either way: the holder's write names
// the revision of each of its experiments that it read.
func TestForceUnlockBetweenCheckAndWrite(t *testing.T) {
	ctx := context.Background()
	suffix := newSuffix()
	mustSave(t, open(t, suffix), backendtest.Sample(3))
	a := open(t, suffix)
	la, err := a.LockExperiments(ctx, []string{"mnist"}, "apply", "v", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer la.Unlock()
	sa := mustLoad(t, a)
	b := open(t, suffix)
	writes := 0
	a.beforeIndexWrite = func() {
		if writes++; writes == 1 {
			// a checked its lock; now someone releases it.
			if err := b.ForceUnlock(la.Info().ID); err != nil {
				t.Error(err)
			}
		}
	}
	sa.Experiments["mnist"].Trials["t0001"].Attempts = 9
	err = a.Save(sa)
	if err == nil || !strings.Contains(err.Error(), "someone released it with force-unlock; not writing") {
		t.Fatalf("the save of a holder force-unlocked between its check and its write: %v, want it refused naming force-unlock", err)
	}
	if got := mustLoad(t, open(t, suffix)); got.Experiments["mnist"].Trials["t0001"].Attempts == 9 {
		t.Fatal("the save of the force-unlocked holder was written after the force-unlock")
	}
	// The state is readable and writable by the next holder.
	lb, err := b.LockExperiments(ctx, []string{"mnist"}, "apply", "v", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer lb.Unlock()
	sb := mustLoad(t, b)
	sb.Experiments["mnist"].Trials["t0001"].Attempts = 4
	mustSave(t, b, sb)
	if got := mustLoad(t, open(t, suffix)); got.Experiments["mnist"].Trials["t0001"].Attempts != 4 {
		t.Fatal("the next holder's save is not there")
	}
}

// An index Secret that cannot be read is reported with a repair that
// works on this backend, and a good copy replaces it (state push -force
// replaces the state through Replace): the replace read the index first
// and failed on it, so no command could repair it.
func TestUnreadableIndexIsReplaced(t *testing.T) {
	suffix := newSuffix()
	b := open(t, suffix)
	good := backendtest.Sample(3)
	mustSave(t, b, good)
	admin := controlPlane(t).Client.CoreV1().Secrets("tfstate")
	ctx := context.Background()
	sec, err := admin.Get(ctx, "trialform-state-"+suffix, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sec.Data[keyIndex] = []byte("not gzip")
	if _, err := admin.Update(ctx, sec, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	c := open(t, suffix)
	_, err = c.Load()
	var ce *state.CorruptError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "trialform-state-"+suffix) || !strings.Contains(err.Error(), "state push -force") || strings.Contains(err.Error(), ".backup") {
		t.Fatalf("load of an unreadable index: %v, want a *state.CorruptError naming the Secret and `state push -force`, and no backup", err)
	}
	lk, err := c.Lock(ctx, "state push", "v", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer lk.Unlock()
	if err := c.Replace(good.Clone()); err != nil {
		t.Fatalf("replace an unreadable index with a good copy: %v", err)
	}
	if got := mustLoad(t, open(t, suffix)); got.Serial != good.Serial || len(got.Experiments["mnist"].Trials) != 3 {
		t.Fatalf("after the replace: serial %d (want %d), %d trials", got.Serial, good.Serial, len(got.Experiments["mnist"].Trials))
	}
}

// A reader that only peeks (`trialform ui`, a standby controller's
// dashboard) reuses what its last Peek read: a Peek after another client
// changed one experiment reads that experiment's parts, not every part of
// the state again (Peek kept no cache of its own: each read every part
// changed since the reader's last Load, which it never makes).
func TestPeekReusesWhatItRead(t *testing.T) {
	w := open(t, "peek")
	s := backendtest.Sample(40)
	for _, name := range []string{"a", "b", "c", "d"} {
		e := s.Experiments["mnist"].Clone()
		e.Name = name
		s.Experiments[name] = e
	}
	mustSave(t, w, s)
	r, err := New(controlPlane(t).Config, w.c.ns, "peek")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Peek(); err != nil {
		t.Fatal(err)
	}
	all := r.partReads.Load()
	if all < 5 {
		t.Fatalf("the first Peek read %d parts, want those of 5 experiments", all)
	}
	s = mustLoad(t, w)
	s.Experiments["a"].Trials["t0001"].Attempts = 7
	mustSave(t, w, s)
	got, err := r.Peek()
	if err != nil {
		t.Fatal(err)
	}
	if n := got.Experiments["a"].Trials["t0001"].Attempts; n != 7 {
		t.Fatalf("the second Peek read attempts %d, want 7", n)
	}
	if again := r.partReads.Load() - all; again*2 > all {
		t.Fatalf("a Peek after one experiment changed read %d parts, the first %d: it read the unchanged ones again", again, all)
	}
}

// TestReadWaitingForAnotherGivesUpWhenItsContextEnds: the controller's
// dashboard reads the state through the controller's own client, with no
// context of the controller's (state.Peek), and while the apiserver is
// down that read retries for 2 minutes holding the client's lock. The
// controller's reads waited for that lock without looking at their
// context, so a stop (SIGTERM) during the outage still waited out the
// dashboard's retries. Now a read waiting for the lock ends with its
// context; the dashboard's read goes on and succeeds once the apiserver
// is back, and the state is whole.
func TestReadWaitingForAnotherGivesUpWhenItsContextEnds(t *testing.T) {
	c := controlPlane(t)
	suffix := newSuffix()
	mustSave(t, open(t, suffix), backendtest.Sample(3))
	b := open(t, suffix)
	reports := make(chan string, 10)
	b.SetReporter(func(msg string) { reports <- msg })
	c.StopComponent("kube-apiserver")
	restarted := false
	restart := func() {
		if !restarted {
			restarted = true
			if err := c.RestartComponent("kube-apiserver"); err != nil {
				t.Fatal(err)
			}
		}
	}
	defer restart()
	// The dashboard's read: it holds the client's lock while it retries.
	dash := make(chan error, 1)
	go func() { _, err := b.Peek(); dash <- err }()
	select {
	case msg := <-reports:
		if !strings.Contains(msg, "cannot be reached") {
			t.Errorf("report %q", msg)
		}
	case err := <-dash:
		t.Fatalf("the dashboard's read ended before the outage was reported: %v", err)
	}
	// The controller's reads, then its stop.
	ctx, cancel := context.WithCancel(context.Background())
	got := make(chan error, 2)
	go func() { _, err := b.LoadContext(ctx); got <- err }()
	go func() { _, err := b.PeekContext(ctx); got <- err }()
	cancel()
	readsGiveUp(t, got, 2, "a read waiting for the dashboard's", nil)
	restart()
	select {
	case err := <-dash:
		if err != nil {
			t.Fatalf("the dashboard's read, once the apiserver is back: %v", err)
		}
	case <-time.After(3 * time.Minute):
		t.Fatal("the dashboard's read still runs 3 minutes after the apiserver came back")
	}
	st := mustLoad(t, b)
	if len(st.Experiments) != len(backendtest.Sample(3).Experiments) {
		t.Fatalf("after the restart the state has %d experiments", len(st.Experiments))
	}
	st.Experiment("mnist").MaxTrials++
	mustSave(t, b, st)
	again := mustLoad(t, open(t, suffix))
	if again.Serial != st.Serial || again.Experiment("mnist").MaxTrials != st.Experiment("mnist").MaxTrials {
		t.Fatalf("read back after the save: serial %d, want %d", again.Serial, st.Serial)
	}
}

// TestReadsGiveUpWhenTheirContextEnds: a controller standing by while the
// apiserver is down reads the state in a loop; told to stop (SIGTERM), it
// waited for that read, retried for 2 minutes, and its pod outlived its
// grace period. LoadContext and PeekContext end with their context, and
// the state is whole afterwards: read again and saved over once the
// apiserver is back.
func TestReadsGiveUpWhenTheirContextEnds(t *testing.T) {
	c := controlPlane(t)
	suffix := newSuffix()
	mustSave(t, open(t, suffix), backendtest.Sample(3))
	b := open(t, suffix)
	reports := make(chan string, 10)
	b.SetReporter(func(msg string) { reports <- msg })
	c.StopComponent("kube-apiserver")
	ctx, cancel := context.WithCancel(context.Background())
	got := make(chan error, 2)
	go func() { _, err := b.LoadContext(ctx); got <- err }()
	go func() { _, err := b.PeekContext(ctx); got <- err }()
	select {
	case msg := <-reports:
		if !strings.Contains(msg, "cannot be reached") {
			t.Errorf("report %q", msg)
		}
	case err := <-got:
		c.RestartComponent("kube-apiserver")
		t.Fatalf("a read ended before the outage was reported: %v", err)
	}
	cancel()
	readsGiveUp(t, got, 2, "a read", func() { c.RestartComponent("kube-apiserver") })
	if err := c.RestartComponent("kube-apiserver"); err != nil {
		t.Fatal(err)
	}
	st, err := b.Load()
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Experiments) != len(backendtest.Sample(3).Experiments) {
		t.Fatalf("after the restart the state has %d experiments", len(st.Experiments))
	}
	st.Experiment("mnist").MaxTrials++
	mustSave(t, b, st)
	again, err := open(t, suffix).Load()
	if err != nil {
		t.Fatal(err)
	}
	if again.Serial != st.Serial || again.Experiment("mnist").MaxTrials != st.Experiment("mnist").MaxTrials {
		t.Fatalf("read back after the save: serial %d, want %d", again.Serial, st.Serial)
	}
}

// A namespace that does not exist (a typo in the block, ml-tema for
// ml-team) is an error naming it and what to do on the first read: it
// read as an empty state, so `init` succeeded, `show` said the state is
// empty and `plan` planned every experiment anew, until apply failed to
// create a Lease there. Nothing is created by the check.
func TestMissingNamespaceIsNamed(t *testing.T) {
	t.Parallel()
	c := controlPlane(t)
	ns := "tfstate-no-such-" + randomID()
	b, err := New(c.Config, ns, newSuffix())
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("namespace %q does not exist", ns)
	if _, err := b.Exists(); err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "kubectl create namespace "+ns) {
		t.Fatalf("Exists: %v, want %q", err, want)
	}
	if _, err := b.Load(); err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("Load: %v, want %q", err, want)
	}
	if _, err := c.Client.CoreV1().Namespaces().Get(context.Background(), ns, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the namespace: %v", err)
	}
	// Once it exists, the state is empty (and the check left no Secret).
	namespace(t, ns)
	if ok, err := b.Exists(); err != nil || ok {
		t.Fatalf("Exists in the new namespace: %v, %v", ok, err)
	}
	if l, err := c.Client.CoreV1().Secrets(ns).List(context.Background(), metav1.ListOptions{}); err != nil || len(l.Items) != 0 {
		t.Fatalf("Secrets in the new namespace: %v", err)
	}
}

// readsGiveUp waits for n reads whose context was cancelled to end with
// context.Canceled, each within 20 s; what names them in the failure,
// and cleanup (if any) runs before the test ends on a timeout.
func readsGiveUp(t *testing.T, got <-chan error, n int, what string, cleanup func()) {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for range n {
		select {
		case err := <-got:
			if !errors.Is(err, context.Canceled) {
				t.Errorf("%s given up: %v, want context.Canceled", what, err)
			}
		case <-deadline:
			if cleanup != nil {
				cleanup()
			}
			t.Fatalf("%s still runs 20 s after its context ended", what)
		}
	}
}
