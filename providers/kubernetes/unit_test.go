package kubernetes

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/hcl/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/trialform/trialform/internal/decl"
	"github.com/trialform/trialform/providers"
	"github.com/trialform/trialform/providers/codedir"
)

func TestJobName(t *testing.T) {
	for _, c := range [][2]string{{"quickstart", "t0000"}, {"A_very.long-Experiment_name_that_goes_on_and_on_and_on", "t12345678901234567890123"}, {"x", "-"}} {
		n := JobName(c[0], c[1])
		if errs := validation.IsDNS1123Label(n); len(errs) > 0 {
			t.Errorf("JobName(%q, %q) = %q: %v", c[0], c[1], n, errs)
		}
		if JobName(c[0], c[1]) != n || JobName(c[0], c[1]+"x") == n {
			t.Errorf("JobName(%q, %q) is not deterministic and distinct", c[0], c[1])
		}
	}
	if LabelValue("t0001") != "t0001" || len(validation.IsValidLabelValue(LabelValue(strings.Repeat("x", 80)))) > 0 {
		t.Error("LabelValue")
	}
}

func TestScanCodeIgnore(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"train.py", "lib/util.py", "data/a.bin", "sub/data/b.bin", "logs/x.log", "keep.log", "__pycache__/c.pyc", ".git/HEAD", "deep/x/y.tmp"} {
		p := filepath.Join(dir, f)
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte(f), 0o644)
	}
	os.WriteFile(filepath.Join(dir, ".nniignore"), []byte("# comment\n/data/\n*.log\n!keep.log\n**/*.tmp\nsub/data\n"), 0o644)
	files, err := scanCode(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range files {
		got = append(got, f.rel)
	}
	sort.Strings(got)
	want := []string{".nniignore", "keep.log", "lib/util.py", "train.py"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("shipped %v, want %v", got, want)
	}
}

func TestScanCodeTooMany(t *testing.T) {
	dir := t.TempDir()
	for i := 0; i <= codedir.MaxFiles; i++ {
		os.WriteFile(filepath.Join(dir, "f"+strings.Repeat("0", 4)+string(rune('a'+i%26))+itoa(i)), nil, 0o644)
	}
	_, err := scanCode(dir)
	if err == nil || !strings.Contains(err.Error(), ".trialformignore") || !strings.Contains(err.Error(), "2000 files") {
		t.Fatalf("err = %v, want a refusal naming .trialformignore", err)
	}
}

func itoa(i int) string {
	s := ""
	for {
		s = string(rune('0'+i%10)) + s
		i /= 10
		if i == 0 {
			return s
		}
	}
}

func TestConfigFrom(t *testing.T) {
	s := &Settings{
		Namespace: "ml", Image: "python:3.11", ImagePullSecrets: []string{"regcred"}, Kubeconfig: "kube/config",
		NodeSelector: map[string]string{"gpu": "a100"},
		Tolerations:  []any{map[string]any{"key": "gpu", "operator": "Exists", "effect": "NoSchedule", "toleration_seconds": 30.0}},
		Resources:    &ResourceSettings{CPU: 0.5, Memory: "8Gi", GPU: 2},
		NFS:          &NFSSettings{Server: "10.0.0.5", Path: "/export", MountPath: "/nfs"},
		Checkpoint:   &CheckpointBlock{StorageClass: "dfs"},
	}
	c, err := ConfigFrom(s, "/base")
	if err != nil {
		t.Fatal(err)
	}
	if c.CPU != "500m" || c.Memory != "8Gi" || c.GPU != 2 || c.NFS.LocalPath != "/nfs" || c.Checkpoint.Size != "1Gi" || c.Kubeconfig != "/base/kube/config" ||
		c.NodeSelector["gpu"] != "a100" || len(c.Tolerations) != 1 || c.Tolerations[0].Effect != "NoSchedule" || *c.Tolerations[0].TolerationSeconds != 30 {
		t.Errorf("config %+v", c)
	}
	w := decl.NewWhere("k", hcl.Range{Filename: "main.hcl"})
	bad := &Settings{Resources: &ResourceSettings{Memory: "lots"}, Tolerations: []any{map[string]any{"keys": "x"}}, Checkpoint: &CheckpointBlock{Size: "big"}}
	var got []string
	for _, d := range bad.Check(w) {
		got = append(got, d.Detail)
	}
	for _, want := range []string{`memory = "lots" is not a Kubernetes quantity`, `unknown field "keys"`, `checkpoint.size = "big"`} {
		if !strings.Contains(strings.Join(got, "\n"), want) {
			t.Errorf("Check of bad settings: %q, want %q", got, want)
		}
	}
}

func TestLogCursorIncremental(t *testing.T) {
	// Three reads of a growing timestamped log, the later ones from the
	// second of the last line seen (as sinceTime returns them): every line
	// is taken once, in order, the unterminated tail only at the end.
	full := "2026-11-23T10:00:00.1Z a\n2026-11-23T10:00:00.2Z b\n2026-11-23T10:00:00.2Z b2\n" +
		"2026-11-23T10:00:01.5Z c\n2026-11-23T10:00:01.5Z d\n2026-11-23T10:00:02Z tail"
	var c logCursor
	var got []string
	got = append(got, c.consume([]byte(full[:strings.Index(full, "c\n")+2]), false, false)...)
	if strings.Join(got, "") != "a\nb\nb2\nc\n" || c.tsn != 1 {
		t.Fatalf("first read took %q, cursor %+v", got, c)
	}
	// sinceTime 10:00:01: the response starts with c again.
	rest := full[strings.Index(full, "2026-11-23T10:00:01.5Z c"):]
	got = append(got, c.consume([]byte(rest), true, false)...)
	if strings.Join(got, "") != "a\nb\nb2\nc\nd\n" || c.tsn != 2 {
		t.Fatalf("second read: %q, cursor %+v", got, c)
	}
	got = append(got, c.consume([]byte(rest), true, true)...)
	if strings.Join(got, "") != "a\nb\nb2\nc\nd\ntail" {
		t.Fatalf("last read: %q", got)
	}
	if c.bytes != int64(len("a\nb\nb2\nc\nd\ntail")) {
		t.Errorf("cursor bytes = %d", c.bytes)
	}
	// A byte offset from before timestamps (the legacy cursor) skips by
	// content and picks up the time of the last skipped line.
	old := logCursor{bytes: int64(len("a\nb\n"))}
	if l := old.consume([]byte(full), false, false); strings.Join(l, "") != "b2\nc\nd\n" {
		t.Errorf("legacy cursor took %q", l)
	}
}

// Issue 25, wrong numbers 3: each line comes with its node time, which
// dates the result it holds (a continuation of a partial line keeps the
// time of its start).
func TestLogCursorLineTimes(t *testing.T) {
	full := "2026-11-23T10:00:00.1Z trialform: intermediate 1\n2026-11-23T10:00:00.8Z trialform: intermediate 2\n" +
		"2026-11-23T10:00:02.25Z trialform: 3\n"
	var c logCursor
	lines, stamps := c.consumeAt([]byte(full), false, true)
	want := []string{"2026-11-23T10:00:00.1Z", "2026-11-23T10:00:00.8Z", "2026-11-23T10:00:02.25Z"}
	if len(lines) != 3 || len(stamps) != 3 {
		t.Fatalf("lines %q stamps %v", lines, stamps)
	}
	for i, w := range want {
		wt, _ := time.Parse(time.RFC3339Nano, w)
		if stamps[i] != wt.UnixNano() {
			t.Errorf("line %d (%q) at %v, want %s", i, lines[i], time.Unix(0, stamps[i]).UTC(), w)
		}
	}
}

func TestConfigMetricsInterval(t *testing.T) {
	c, err := ConfigFrom(&Settings{MetricsInterval: "30s"}, "/")
	if err != nil || c.MetricsInterval != 30*time.Second {
		t.Errorf("metrics_interval 30s: %v, %v", c.MetricsInterval, err)
	}
	if _, err := ConfigFrom(&Settings{MetricsInterval: "soon"}, "/"); err == nil || !strings.Contains(err.Error(), "metrics_interval") {
		t.Errorf("a bad metrics_interval: %v", err)
	}
	d := (&Settings{MetricsInterval: "-1s"}).Check(decl.NewWhere("k", hcl.Range{}))
	if len(d) != 1 || !strings.Contains(d[0].Detail, `metrics_interval = "-1s" is not a duration`) {
		t.Errorf("Check of a negative metrics_interval: %v", d)
	}
}

// Reads bounded by a budget progress through a second holding more lines
// than one read takes: the lines of that second already consumed are
// skipped, not counted against the budget.
func TestLogCursorProgressesWithinOneSecond(t *testing.T) {
	var full strings.Builder
	for i := 0; i < 1000; i++ {
		fmt.Fprintf(&full, "2026-11-23T10:00:00.%03dZ line %d\n", i/10, i)
	}
	var c logCursor
	haveTS := false
	var got []string
	for reads := 0; ; reads++ {
		if reads > 200 {
			t.Fatalf("no end after %d reads, %d lines taken", reads, len(got))
		}
		// What sinceTime (the cursor's second) returns: all of it.
		more, err := c.read(strings.NewReader(full.String()), haveTS, true, 500, func(line string, _ int64) { got = append(got, line) })
		if err != nil {
			t.Fatal(err)
		}
		haveTS = true
		if !more {
			break
		}
	}
	if len(got) != 1000 || got[999] != "line 999\n" {
		t.Fatalf("%d lines taken, last %q", len(got), got[len(got)-1])
	}
	for i, l := range got {
		if l != fmt.Sprintf("line %d\n", i) {
			t.Fatalf("line %d is %q", i, l)
		}
	}
}

func failedJob() *batchv1.Job {
	return &batchv1.Job{Status: batchv1.JobStatus{Conditions: []batchv1.JobCondition{
		{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: "BackoffLimitExceeded"}}}}
}

func exited143() corev1.PodStatus {
	return corev1.PodStatus{Phase: corev1.PodFailed, ContainerStatuses: []corev1.ContainerStatus{
		{Name: "trial", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 143}}}}}
}

// A pod deleted gracefully or evicted, whose container exited on the
// SIGTERM, is lost (resumed), not a failed trial.
func TestDeletedOrEvictedPodIsLost(t *testing.T) {
	spec := corev1.PodSpec{Containers: []corev1.Container{{Name: "trial"}}}
	now := metav1.Now()
	deleted := corev1.Pod{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: &now}, Spec: spec, Status: exited143()}
	evicted := corev1.Pod{Spec: spec, Status: exited143()}
	evicted.Status.Conditions = []corev1.PodCondition{{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: "EvictionByEvictionAPI"}}
	for name, pod := range map[string]*corev1.Pod{"deleted": &deleted, "evicted": &evicted} {
		if ph, r := jobPhase(failedJob(), pod); ph != providers.PhaseLost {
			t.Errorf("%s: %s (%s), want lost", name, ph, r)
		}
	}
	failed := corev1.Pod{Spec: spec, Status: exited143()}
	if ph, r := jobPhase(failedJob(), &failed); ph != providers.PhaseFailed || r != "exit status 143 (signal 15)" {
		t.Errorf("a trial killed by a signal of its own: %s (%s), want failed", ph, r)
	}
}

// A pod that waits says why in the trial's note: it cannot be scheduled,
// or its container waits on its image or its config.
func TestPendingPodReason(t *testing.T) {
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{AnnTrial: "t0", AnnExperiment: "e"}}}
	spec := corev1.PodSpec{Containers: []corev1.Container{{Name: "trial"}}}
	waiting := func(reason, msg string) corev1.PodStatus {
		return corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{
			{Name: "trial", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: msg}}}}}
	}
	for _, tc := range []struct {
		status corev1.PodStatus
		want   string
	}{
		{corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
			Reason: "Unschedulable", Message: "0/1 nodes are available: 1 Insufficient cpu."}}},
			"its pod cannot be scheduled: Unschedulable 0/1 nodes are available: 1 Insufficient cpu."},
		{waiting("ImagePullBackOff", `Back-off pulling image "nope"`), `its container trial waits: ImagePullBackOff (Back-off pulling image "nope")`},
		{waiting("ErrImagePull", ""), "its container trial waits: ErrImagePull"},
		{waiting("CrashLoopBackOff", "back-off 10s"), "its container trial waits: CrashLoopBackOff (back-off 10s)"},
		{waiting("CreateContainerConfigError", `secret "s" not found`), `its container trial waits: CreateContainerConfigError (secret "s" not found)`},
		{waiting("ContainerCreating", ""), ""},
	} {
		o := observe(job, []corev1.Pod{{Spec: spec, Status: tc.status}})
		if o.Note != tc.want || o.Phase.Ended() {
			t.Errorf("%+v: %s, note %q, want %q", tc.status, o.Phase, o.Note, tc.want)
		}
	}
}
