package kubernetes

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/trialform/trialform/providers"
	"github.com/trialform/trialform/providers/trialproto"
)

// Offsets keys in Observation.MetricsOffset.
const (
	offSeq      = "seq"      // next sequence number for lines that carry none
	offFinal    = "final"    // 1 once a FINAL result was returned
	offBadFinal = "badfinal" // 1 once a FINAL that cannot be used (NaN) was returned
	offLog      = "log/"     // + pod name: bytes of its log consumed
	offDone     = "done/"    // + pod name: 1 once its container ended and its log was read to the end
	offTS       = "ts/"      // + pod name: node time (unix ns) of the last log line consumed
	offTSN      = "tsn/"     // + pod name: lines consumed that carry exactly that time
	offErr      = "err/"     // + pod name: failed reads of an ended container's log
	offNote     = "note/"    // + pod name: why its log was not read to its end (a logNote)
	// + pod name + "/" + metric_regex name: the last value read of that
	// name (float64 bits; NaN for null), for the synthetic final result.
	offRx = "rx/"
	// + pod name + "/" + metric_regex name: the order the name was first
	// read in.
	offRxOrder = "rxo/"
)

// Values of offNote: why a pod's log was not read (to its end).
const (
	noteGivenUp   = 1 // an ended container's log could not be read maxLogErrors times
	noteCut       = 2 // an ended container's log was longer than maxEndedLogRead
	noteForbidden = 3 // the account may not read pod logs
)

// logNote is the trial's note for an offNote value.
func (k *Kubernetes) logNote(kind int64) string {
	switch kind {
	case noteGivenUp:
		return fmt.Sprintf("its log could not be read to its end (%d tries): results printed past what was read are missing", maxLogErrors)
	case noteCut:
		return fmt.Sprintf("its log was read only up to %d MiB past the last read: results printed after that are missing", maxEndedLogRead>>20)
	case noteForbidden:
		return "its metrics could not be read: reading its pod's log is forbidden (grant " + logPermission(k.namespace) + ")"
	}
	return ""
}

// logPermission is the permission a log read needs.
func logPermission(ns string) string { return "get pods/log in namespace " + ns }

// maxRegexNames bounds the metric_regex names a pod's last values are kept
// for (the synthetic final result).
const maxRegexNames = 100

// Read observes one trial: its Job, the Job's pods, and the metrics in the
// newest pod's log past req.MetricsOffset.
func (k *Kubernetes) Read(ctx context.Context, req providers.ReadRequest) (providers.Observation, error) {
	name := JobName(req.Experiment, req.TrialID)
	var job *batchv1.Job
	var pods []corev1.Pod
	ok := false
	if f := k.following(); f != nil {
		// The watched copy, when it holds the Job and has caught up with
		// what this process did to it; a Job it lacks is asked for below.
		if j, trusted := f.job(k.namespace, name); trusted && j != nil {
			if j.Annotations[AnnExperiment] != req.Experiment || j.Annotations[AnnTrial] != req.TrialID {
				return k.missing(req), nil
			}
			job, pods, ok = j, f.ownedPods(j.UID), true
			// The two copies follow separate watches: a Job that ended
			// before its pod's copy shows the trial container's end
			// would be read without the pod's last lines and exit code.
			if ph, _ := jobPhase(job, nil); ph.Ended() && (len(pods) == 0 || terminated(&pods[len(pods)-1]) == nil) {
				var err error
				if pods, err = k.jobPods(ctx, job); err != nil {
					return providers.Observation{}, err
				}
			}
		}
	}
	if !ok {
		job, pods, ok = k.cached(req.Experiment, req.TrialID)
	}
	if !ok {
		var err error
		job, err = k.getJob(ctx, name)
		if apierrors.IsNotFound(err) || (err == nil && (job.Annotations[AnnExperiment] != req.Experiment || job.Annotations[AnnTrial] != req.TrialID)) {
			return k.missing(req), nil
		}
		if err != nil {
			return providers.Observation{}, fmt.Errorf("get job %s: %w", name, err)
		}
		if pods, err = k.jobPods(ctx, job); err != nil {
			return providers.Observation{}, err
		}
	}
	o := observe(job, pods)
	if o.Phase == providers.PhaseLost && job.DeletionTimestamp != nil {
		o.Reason = "its job is being deleted outside trialform"
	}
	k.markSeen(req.Experiment, req.TrialID, true)
	if err := k.readMetrics(ctx, job, pods, req.MetricsOffset, req.SkipRunningMetrics, &o); err != nil {
		return providers.Observation{}, err
	}
	return o, nil
}

// missing is the observation of a trial whose Job is not there: lost when
// it was seen before (by this process, or the state holds its handle),
// else unknown.
func (k *Kubernetes) missing(req providers.ReadRequest) providers.Observation {
	if req.Handle["uid"] != "" || k.wasSeen(req.Experiment, req.TrialID) {
		return providers.Observation{
			TrialID: req.TrialID, Experiment: req.Experiment, Exists: true, Phase: providers.PhaseLost,
			Handle: req.Handle, Reason: "its job was deleted outside trialform", MetricsOffset: req.MetricsOffset,
		}
	}
	return providers.Observation{TrialID: req.TrialID, Experiment: req.Experiment}
}

func (k *Kubernetes) jobPods(ctx context.Context, job *batchv1.Job) ([]corev1.Pod, error) {
	var list *corev1.PodList
	sel := labels.Set{"batch.kubernetes.io/controller-uid": string(job.UID)}.String()
	err := retry(ctx, func() error {
		var err error
		list, err = k.client.CoreV1().Pods(k.namespace).List(ctx, metav1.ListOptions{LabelSelector: sel})
		return err
	})
	if err != nil {
		return nil, listErr("list pods of job "+job.Name, "pods", k.namespace, err)
	}
	sortPods(list.Items)
	return list.Items, nil
}

func sortPods(pods []corev1.Pod) {
	sort.SliceStable(pods, func(i, j int) bool {
		return pods[i].CreationTimestamp.Before(&pods[j].CreationTimestamp)
	})
}

// List returns every trial of the experiment found by label selector: one
// call for the Jobs and one for their pods, whatever the number of trials.
func (k *Kubernetes) List(ctx context.Context, experiment string) ([]providers.Observation, error) {
	if f := k.following(); f != nil && f.caughtUpAll(k.namespace, experiment) {
		objs, byJob := f.experimentObjs(experiment)
		jobs := make([]*batchv1.Job, 0, len(objs))
		for _, o := range objs {
			if j, ok := o.(*batchv1.Job); ok {
				jobs = append(jobs, j)
			}
		}
		out, _ := observeAll(experiment, jobs, byJob)
		return out, nil
	}
	sel := labels.Set{LabelExperiment: LabelValue(experiment)}.String()
	var jobs *batchv1.JobList
	var pods *corev1.PodList
	// The two lists run at once: on 1,000 trials each takes a few hundred
	// milliseconds, most of it the apiserver encoding.
	podsErr := make(chan error, 1)
	go func() {
		podsErr <- retry(ctx, func() error {
			var err error
			pods, err = k.client.CoreV1().Pods(k.namespace).List(ctx, metav1.ListOptions{LabelSelector: sel})
			return err
		})
	}()
	err := retry(ctx, func() error {
		var err error
		jobs, err = k.client.BatchV1().Jobs(k.namespace).List(ctx, metav1.ListOptions{LabelSelector: sel})
		return err
	})
	perr := <-podsErr
	if err != nil {
		return nil, listErr("list jobs", "jobs", k.namespace, err)
	}
	if perr != nil {
		return nil, listErr("list pods", "pods", k.namespace, perr)
	}
	if len(jobs.Items) == 0 {
		return nil, nil
	}
	byJob := map[string][]corev1.Pod{}
	for _, p := range pods.Items {
		uid := p.Labels["batch.kubernetes.io/controller-uid"]
		byJob[uid] = append(byJob[uid], p)
	}
	js := make([]*batchv1.Job, len(jobs.Items))
	for i := range jobs.Items {
		js[i] = &jobs.Items[i]
	}
	out, snap := observeAll(experiment, js, byJob)
	k.listed.put(experiment, snap, byJob)
	return out, nil
}

// observeAll is the observations of an experiment's listed Jobs (less
// those being deleted), by trial id, and the Jobs by trial id.
func observeAll(experiment string, jobs []*batchv1.Job, byJob map[string][]corev1.Pod) ([]providers.Observation, map[string]*batchv1.Job) {
	var out []providers.Observation
	snap := map[string]*batchv1.Job{}
	for _, j := range jobs {
		if j.Annotations[AnnExperiment] != experiment || j.DeletionTimestamp != nil {
			continue
		}
		ps := byJob[string(j.UID)]
		sortPods(ps)
		snap[j.Annotations[AnnTrial]] = j
		out = append(out, observe(j, ps))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].TrialID < out[j].TrialID })
	return out, snap
}

// maxDurationReason is the reason of a trial stopped because it ran past
// its max_duration (d as its annotation holds it).
func maxDurationReason(d string) string { return maxDurationPrefix + d + ")" }

const maxDurationPrefix = "max_duration exceeded ("

// pastMaxDuration says whether a trial that ended in phase ph, for reason,
// was stopped past its max_duration rather than by Stop (whose reasons
// are the plan's, never worded so).
func pastMaxDuration(ph providers.Phase, reason string) bool {
	return ph == providers.PhaseKilled && strings.HasPrefix(reason, maxDurationPrefix)
}

// jobPhase maps a Job's conditions (and its newest pod) to a phase.
func jobPhase(job *batchv1.Job, pod *corev1.Pod) (providers.Phase, string) {
	for _, c := range job.Status.Conditions {
		if c.Status != corev1.ConditionTrue {
			continue
		}
		switch c.Type {
		case batchv1.JobComplete:
			return providers.PhaseSucceeded, ""
		case batchv1.JobFailed:
			if r := job.Annotations[AnnStopReason]; r != "" {
				return providers.PhaseKilled, r
			}
			if c.Reason == batchv1.JobReasonDeadlineExceeded {
				return providers.PhaseKilled, maxDurationReason(job.Annotations[AnnMaxDuration])
			}
			if r := podLost(pod); r != "" {
				// Deleted or evicted: its container may have exited on
				// the SIGTERM (143), which is not the trial failing.
				return providers.PhaseLost, "its pod was lost: " + r
			}
			if t := terminated(pod); t != nil {
				return providers.PhaseFailed, exitReason(t)
			}
			// Failed without a container that exited: the pod was
			// deleted or evicted, or its node went away.
			return providers.PhaseLost, "its pod was lost: " + strings.TrimSpace(c.Reason+" "+c.Message)
		}
	}
	if pod != nil {
		if pod.Status.Phase == corev1.PodRunning {
			return providers.PhaseRunning, ""
		}
		if t := terminated(pod); t != nil && pod.DeletionTimestamp == nil {
			// Exited; the Job's condition follows shortly.
			return providers.PhaseRunning, ""
		}
	} else if job.Status.Ready != nil && *job.Status.Ready > 0 {
		return providers.PhaseRunning, ""
	}
	return providers.PhasePending, ""
}

// podLost says why a pod was taken away rather than its trial ending on its
// own: it is being deleted, or a DisruptionTarget condition says it is
// (eviction, preemption, its node going away); "" when neither.
func podLost(pod *corev1.Pod) string {
	if pod == nil {
		return ""
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.DisruptionTarget && c.Status == corev1.ConditionTrue {
			return strings.TrimSpace("DisruptionTarget " + c.Reason + " " + c.Message)
		}
	}
	if pod.DeletionTimestamp != nil {
		return "it was deleted"
	}
	return ""
}

// waitingReasons are the reasons of a waiting trial container worth telling.
var waitingReasons = map[string]bool{
	"ImagePullBackOff": true, "ErrImagePull": true, "CrashLoopBackOff": true, "CreateContainerConfigError": true,
	"InvalidImageName": true, "CreateContainerError": true,
}

// pendingReason is why a pod that has not run its trial waits: it cannot be
// scheduled, or its trial container waits for a reason worth telling; ""
// otherwise.
func pendingReason(pod *corev1.Pod) string {
	if pod == nil || pod.DeletionTimestamp != nil {
		return ""
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && (c.Reason != "" || c.Message != "") {
			return "its pod cannot be scheduled: " + strings.TrimSpace(c.Reason+" "+c.Message)
		}
	}
	for _, cs := range append(append([]corev1.ContainerStatus(nil), pod.Status.InitContainerStatuses...), pod.Status.ContainerStatuses...) {
		if w := cs.State.Waiting; w != nil && waitingReasons[w.Reason] {
			r := "its container " + cs.Name + " waits: " + w.Reason
			if w.Message != "" {
				r += " (" + w.Message + ")"
			}
			return r
		}
	}
	return ""
}

func exitReason(t *corev1.ContainerStateTerminated) string {
	r := "exit status " + strconv.Itoa(int(t.ExitCode))
	if t.ExitCode > 128 && t.ExitCode < 160 {
		r += fmt.Sprintf(" (signal %d)", t.ExitCode-128)
	}
	if t.Reason != "" && t.Reason != "Error" && t.Reason != "Completed" {
		r += " (" + t.Reason + ")"
	}
	return r
}

// trialContainer is the name of the pod's container that runs the trial:
// the first (operators want their own names: "tensorflow", "pytorch").
func trialContainer(pod *corev1.Pod) string {
	if len(pod.Spec.Containers) > 0 {
		return pod.Spec.Containers[0].Name
	}
	return containerName
}

func terminated(pod *corev1.Pod) *corev1.ContainerStateTerminated {
	if pod == nil {
		return nil
	}
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.Name == trialContainer(pod) && cs.State.Terminated != nil {
			return cs.State.Terminated
		}
	}
	return nil
}

func started(pod *corev1.Pod) *time.Time {
	if pod == nil {
		return nil
	}
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.Name != trialContainer(pod) {
			continue
		}
		switch {
		case cs.State.Running != nil:
			t := cs.State.Running.StartedAt.Time
			return &t
		case cs.State.Terminated != nil:
			t := cs.State.Terminated.StartedAt.Time
			return &t
		}
	}
	return nil
}

// observe builds the observation of a Job from its pods (oldest first).
func observe(job *batchv1.Job, pods []corev1.Pod) providers.Observation {
	var pod *corev1.Pod
	if len(pods) > 0 {
		pod = &pods[len(pods)-1]
	}
	ph, reason := jobPhase(job, pod)
	o := providers.Observation{
		TrialID: job.Annotations[AnnTrial], Experiment: job.Annotations[AnnExperiment], Exists: true,
		Phase: ph, Reason: reason, Handle: handle(job), Lineage: job.Annotations[AnnLineage], Owner: ownerOf(job.Annotations),
		PastMaxDuration: pastMaxDuration(ph, reason),
	}
	o.Spec = cachedSpec(job) // for drift (spec.go)
	if !ph.Ended() && ph != providers.PhaseLost && terminated(pod) == nil {
		o.Note = pendingReason(pod)
	}
	if t := started(pod); t != nil {
		o.StartedAt = t
	} else if job.Status.StartTime != nil {
		t := job.Status.StartTime.Time
		o.StartedAt = &t
	}
	if ph.Ended() || ph == providers.PhaseLost {
		if t := terminated(pod); t != nil {
			code := int(t.ExitCode)
			o.ExitCode = &code
			e := t.FinishedAt.Time
			o.EndedAt = &e
		}
		if o.EndedAt == nil {
			if job.Status.CompletionTime != nil {
				e := job.Status.CompletionTime.Time
				o.EndedAt = &e
			}
			for _, c := range job.Status.Conditions {
				if (c.Type == batchv1.JobFailed || c.Type == batchv1.JobComplete) && c.Status == corev1.ConditionTrue {
					e := c.LastTransitionTime.Time
					o.EndedAt = &e
				}
			}
		}
		if o.StartedAt != nil && o.EndedAt != nil && o.EndedAt.Before(*o.StartedAt) {
			e := *o.StartedAt
			o.EndedAt = &e
		}
	}
	return o
}

// readMetrics reads the newest pod's log past the offset and parses metric
// lines; once the container terminated, the rest (even an unterminated last
// line) is consumed, and a final result missing from the log is taken from
// the termination message.
//
// The log is read incrementally: lines carry the node's timestamps, and
// once a line was consumed the next read asks only for lines since its
// second (sinceTime) and skips the ones already seen. That keeps each read
// small for trials that log a lot and survives the kubelet rotating the
// log, which a byte offset would not. A running pod's log is read at most
// once per Config.MetricsInterval by this process (watch, apply -wait),
// and not by a new one while the last line read from it is younger than
// that (lineFresh).
func (k *Kubernetes) readMetrics(ctx context.Context, job *batchv1.Job, pods []corev1.Pod, offsets map[string]int64, skipRunning bool, o *providers.Observation) error {
	newOff := map[string]int64{}
	for _, key := range []string{offSeq, offFinal, offBadFinal} {
		if v, ok := offsets[key]; ok {
			newOff[key] = v
		}
	}
	o.MetricsOffset = newOff
	if len(pods) == 0 {
		for key, v := range offsets {
			newOff[key] = v
		}
		return nil
	}
	pod := &pods[len(pods)-1]
	term := terminated(pod)
	defer func() {
		if o.Note == "" {
			o.Note = k.logNote(newOff[offNote+pod.Name])
		}
	}()
	keep := func() {
		for _, key := range []string{offLog, offDone, offTS, offTSN, offErr, offNote} {
			if v, ok := offsets[key+pod.Name]; ok {
				newOff[key+pod.Name] = v
			}
		}
		for key, v := range offsets {
			if strings.HasPrefix(key, offRx+pod.Name+"/") || strings.HasPrefix(key, offRxOrder+pod.Name+"/") {
				newOff[key] = v
			}
		}
	}
	// A trial container that has not started (the pod is pending, an
	// init container or the image pull still runs) has no log yet.
	if term == nil && started(pod) == nil {
		keep()
		return nil
	}
	if term != nil && offsets[offDone+pod.Name] == 1 {
		keep()
		return nil
	}
	// A running container's log is not asked for when the caller keeps
	// none of it (a plan: ReadRequest.SkipRunningMetrics), nor when it
	// was read less than metrics_interval ago.
	if term == nil && (skipRunning || k.lineFresh(offsets, pod.Name) || !k.logDue(pod.UID)) {
		keep()
		return nil
	}
	pid, _ := strconv.Atoi(job.Annotations[AnnParameterID])
	var re *regexp.Regexp
	if s := job.Annotations[AnnMetricRegex]; s != "" {
		re, _ = regexp.Compile(s)
	}
	keep()
	cur := logCursor{bytes: offsets[offLog+pod.Name], ts: offsets[offTS+pod.Name], tsn: offsets[offTSN+pod.Name]}
	_, haveTS := offsets[offTS+pod.Name]
	opts := &corev1.PodLogOptions{Container: trialContainer(pod), Timestamps: true}
	if haveTS {
		opts.SinceTime = &metav1.Time{Time: time.Unix(0, cur.ts).UTC().Truncate(time.Second)}
	}
	col := trialproto.Collector{ParameterID: pid, Regex: re, Seq: int(newOff[offSeq]), Final: newOff[offFinal] == 1}
	// add keeps the collector's state in the offsets.
	add := func(m providers.Metric) {
		newOff[offSeq] = int64(col.Seq)
		if col.Final {
			newOff[offFinal] = 1
		}
		if m.Type == trialproto.TypeFinal && m.Garbage != "" {
			newOff[offBadFinal] = 1
		}
		o.Metrics = append(o.Metrics, m)
	}
	// The log is streamed: the lines of the cursor's second already
	// consumed are read and dropped, however many, and at most budget
	// bytes of new lines are taken. A running container's rest is read
	// by the next refreshes; an ended one's is read to its end now (the
	// trial is not read again once its end is recorded).
	budget := int64(maxLogRead)
	if term != nil {
		budget = maxEndedLogRead
	}
	rctx, cancel := context.WithTimeout(ctx, logReadTimeout)
	defer cancel()
	more := false
	rc, err := k.stream.CoreV1().Pods(k.namespace).GetLogs(pod.Name, opts).Stream(rctx)
	if err == nil {
		more, err = cur.read(rc, haveTS, term != nil, budget, func(line string, ts int64) {
			m, ok := col.Line(line)
			if !ok {
				return
			}
			if re != nil {
				if _, own := trialproto.ParseStdoutLine(line, nil); !own {
					keepLastRegex(newOff, pod.Name, m.Value)
				}
			}
			if m.Time.IsZero() && ts > 0 {
				// The node's time for the line: when the trial
				// printed it, not when this read found it.
				m.Time = time.Unix(0, ts).UTC()
			}
			add(m)
		})
		rc.Close()
		newOff[offLog+pod.Name], newOff[offTS+pod.Name], newOff[offTSN+pod.Name] = cur.bytes, cur.ts, cur.tsn
	}
	if err != nil && ctx.Err() != nil {
		return ctx.Err()
	}
	if err == nil && newOff[offNote+pod.Name] == noteForbidden {
		delete(newOff, offNote+pod.Name) // granted since
	}
	switch {
	case apierrors.IsForbidden(err):
		newOff[offNote+pod.Name] = noteForbidden
		k.mu.Lock()
		k.logForbidden = true
		k.mu.Unlock()
		if term != nil {
			newOff[offDone+pod.Name] = 1
		}
	case err != nil:
		// No log (rotated, node gone), or its stream broke: the lines
		// taken count, the termination message may still hold the final
		// result. An ended container's log that cannot be read three
		// times is given up (its node is gone): it is not asked for
		// again.
		if term != nil {
			if newOff[offErr+pod.Name]++; newOff[offErr+pod.Name] >= maxLogErrors {
				newOff[offDone+pod.Name] = 1
				newOff[offNote+pod.Name] = noteGivenUp
			}
		}
		if o.Phase.Ended() {
			o.Note = fmt.Sprintf("its log could not be read to its end (%v): results printed past what was read are missing", err)
		}
	case term != nil && more:
		newOff[offDone+pod.Name] = 1
		newOff[offNote+pod.Name] = noteCut
	case term != nil:
		newOff[offDone+pod.Name] = 1
		// The synthetic final of regexp metrics: the last value of each
		// name, kept with the cursor as the log was read.
		if term.ExitCode == 0 && re != nil && newOff[offFinal] == 0 {
			if m, ok := lastRegexFinal(newOff, pod.Name); ok {
				m.ParameterID = pid
				add(col.Add(m))
			}
		}
	}
	// The termination message repeats the log's final result: taken only
	// when the log held none (a NaN one read there would be said twice).
	if term != nil && newOff[offFinal] == 0 && newOff[offBadFinal] == 0 && term.Message != "" {
		for _, line := range strings.Split(term.Message, "\n") {
			if m, ok := trialproto.ParseStdoutLine(line, nil); ok && m.Type == trialproto.TypeFinal {
				add(col.Add(m))
				break
			}
		}
	}
	return nil
}

// keepLastRegex records in off the values of a metric_regex line's metric
// (a JSON object of numbers or null) as the last ones of their names.
func keepLastRegex(off map[string]int64, pod, value string) {
	dec := json.NewDecoder(strings.NewReader(value))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return
	}
	n := int64(0)
	for key := range off {
		if strings.HasPrefix(key, offRxOrder+pod+"/") {
			n++
		}
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return
		}
		name, _ := t.(string)
		var v *float64
		if err := dec.Decode(&v); err != nil {
			return
		}
		f := math.NaN()
		if v != nil {
			f = *v
		}
		if _, seen := off[offRxOrder+pod+"/"+name]; !seen {
			if n >= maxRegexNames {
				continue
			}
			off[offRxOrder+pod+"/"+name] = n
			n++
		}
		off[offRx+pod+"/"+name] = int64(math.Float64bits(f))
	}
}

// lastRegexFinal is the synthetic FINAL result of a pod's metric_regex
// values: the last value of each name, in the order the names first came.
func lastRegexFinal(off map[string]int64, pod string) (providers.Metric, bool) {
	type kv struct {
		name  string
		order int64
	}
	var names []kv
	for key, v := range off {
		if name, ok := strings.CutPrefix(key, offRxOrder+pod+"/"); ok {
			names = append(names, kv{name, v})
		}
	}
	if len(names) == 0 {
		return providers.Metric{}, false
	}
	sort.Slice(names, func(i, j int) bool { return names[i].order < names[j].order })
	var b strings.Builder
	b.WriteByte('{')
	for i, n := range names {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(n.name)
		b.Write(k)
		b.WriteByte(':')
		f := math.Float64frombits(uint64(off[offRx+pod+"/"+n.name]))
		if math.IsNaN(f) || math.IsInf(f, 0) {
			b.WriteString("null")
		} else {
			b.WriteString(strconv.FormatFloat(f, 'g', -1, 64))
		}
	}
	b.WriteByte('}')
	return providers.Metric{Type: trialproto.TypeFinal, Value: b.String()}, true
}

// maxLogErrors is how many failed reads of an ended container's log
// are tried before it is given up.
const maxLogErrors = 3

// maxLogRead bounds one read of a pod's log; a longer backlog is read over
// several refreshes.
const maxLogRead = 8 << 20

// logCursor is how far a pod's log was consumed: content bytes, and the
// node time (unix ns) of the last line with how many lines carried
// exactly that time.
type logCursor struct {
	bytes, ts, tsn int64
}

// at counts one more line at node time ts.
func (c *logCursor) at(ts int64) {
	if ts != c.ts {
		c.ts, c.tsn = ts, 0
	}
	c.tsn++
}

// consume takes a timestamped log ("<RFC3339Nano> <line>" per line) and
// returns the lines past the cursor, advancing it. Without a time in the
// cursor (the first read, or an offset written before timestamps were
// used) lines are skipped by content bytes. Only complete lines are taken,
// unless all is set (the container ended and the log is whole).
func (c *logCursor) consume(raw []byte, haveTS, all bool) []string {
	out, _ := c.consumeAt(raw, haveTS, all)
	return out
}

// consumeAt is consume that also returns each line's node time (unix ns;
// a continuation of a partial line has the time of the line before it).
func (c *logCursor) consumeAt(raw []byte, haveTS, all bool) ([]string, []int64) {
	var out []string
	var stamps []int64
	c.read(bytes.NewReader(raw), haveTS, all, math.MaxInt64, func(line string, ts int64) {
		out = append(out, line)
		stamps = append(stamps, ts)
	})
	return out, stamps
}

// read is consumeAt on a stream: it reads r a line at a time (memory
// bounded by maxLogLine whatever the log holds), hands each line past the
// cursor to take with its node time, and stops once budget content bytes
// were taken; more reports that it stopped there with lines left. A line
// longer than maxLogLine counts as read but is handed as "" (no metric
// line is that long).
func (c *logCursor) read(r io.Reader, haveTS, all bool, budget int64, take func(line string, ts int64)) (more bool, err error) {
	br := logReaders.Get().(*bufio.Reader)
	br.Reset(r)
	defer func() { br.Reset(nil); logReaders.Put(br) }()
	var scratch []byte    // the line being read, its memory kept between lines
	var seen, taken int64 // content bytes of this response skipped or taken; taken
	skipAt, skipN := c.ts, c.tsn
	for {
		if taken >= budget {
			if _, err := br.Peek(1); err == io.EOF {
				return false, nil
			} else if err != nil {
				return true, err
			}
			return true, nil
		}
		raw, n, complete, rerr := readLogLine(br, scratch[:0])
		scratch = raw
		if n == 0 || (!complete && !all) {
			if rerr == io.EOF {
				rerr = nil
			}
			return false, rerr
		}
		if complete {
			raw = append(raw, '\n')
		}
		line := string(raw) // one string: the content below is a part of it, newline included
		overlong := n > maxLogLine
		stamp, content, ok := strings.Cut(line, " ")
		var ts int64
		size := n // content bytes, newline included
		if t, err := time.Parse(time.RFC3339Nano, stamp); ok && err == nil {
			ts = t.UnixNano()
			size -= int64(len(stamp)) + 1
		} else {
			// Not timestamped: the continuation of a partial line.
			content, ts = line, c.ts
		}
		if overlong {
			content = ""
		}
		seen += size
		switch {
		case haveTS && ts < skipAt:
		case haveTS && ts == skipAt && skipN > 0:
			skipN--
		case !haveTS && seen <= c.bytes:
			c.at(ts)
		default:
			take(content, ts)
			c.bytes += size
			c.at(ts)
			taken += size
		}
		if rerr != nil {
			if rerr == io.EOF {
				rerr = nil
			}
			return false, rerr
		}
	}
}

// logReaders are the 64 KiB buffers of read, kept between reads: a
// refresh reads every running pod's log, and a new buffer for each was
// most of its allocations (64 MiB for 1,000 pods) and so of its GC.
var logReaders = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 64<<10) }}

// readLogLine reads one line of br: its first maxLogLine bytes (without
// the newline, appended to line), its whole length n (with it), and
// whether it ended with a newline.
func readLogLine(br *bufio.Reader, line []byte) (_ []byte, n int64, complete bool, err error) {
	for {
		frag, err := br.ReadSlice('\n')
		n += int64(len(frag))
		if err == nil {
			frag = frag[:len(frag)-1]
		}
		if room := maxLogLine - len(line); room > 0 {
			line = append(line, frag[:min(room, len(frag))]...)
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		return line, n, err == nil, err
	}
}

// maxLogLine bounds the bytes of one log line kept in memory.
const maxLogLine = 1 << 20

// maxEndedLogRead bounds the new bytes read from an ended container's log,
// which is read to its end at once; past it, the trial's note says so.
const maxEndedLogRead = 256 << 20

// logReadTimeout bounds one read of a pod's log.
const logReadTimeout = 2 * time.Minute

// lineFresh reports whether the last line consumed from a running pod's
// log (by this process or one before it: the cursor the state keeps)
// carries a node time less than MetricsInterval ago. Its log was then read
// after that line was written, so what it may have grown since is younger
// than MetricsInterval: a new process (the next `plan`, a `watch` started
// again, a command while the controller refreshes) leaves it for later, as
// logDue does within one process, instead of asking for every running
// pod's log again. A node clock ahead of this one by less than
// MetricsInterval stretches that by its lead; one further ahead or behind
// reads as usual.
func (k *Kubernetes) lineFresh(offsets map[string]int64, pod string) bool {
	ts, ok := offsets[offTS+pod]
	if !ok || ts <= 0 {
		return false
	}
	age := time.Since(time.Unix(0, ts))
	return age >= 0 && age < k.cfg.MetricsInterval
}

// logDue reports whether a running pod's log is due for a read (at most
// one per MetricsInterval in this process) and records the read.
func (k *Kubernetes) logDue(uid types.UID) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	if t, ok := k.logRead[uid]; ok && time.Since(t) < k.cfg.MetricsInterval {
		return false
	}
	k.logRead[uid] = time.Now()
	return true
}
