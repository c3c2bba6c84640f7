package controller

import (
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/trialform/trialform/plan"
)

// Metrics are the controller's Prometheus metrics, in a registry of
// their own (with the Go and process collectors).
type Metrics struct {
	Registry *prometheus.Registry

	Trials         *prometheus.GaugeVec // experiment, status
	PlanSeconds    prometheus.Histogram
	ApplySeconds   prometheus.Histogram
	SyncedCommit   *prometheus.GaugeVec // commit: 1 for the commit in force
	SyncedAt       prometheus.Gauge
	FetchedCommit  *prometheus.GaugeVec // commit: 1 for the last commit fetched
	Held           *prometheus.GaugeVec // experiment: trials its held change would tear down (+1 for a removal)
	SyncErrors     *prometheus.CounterVec
	LastSyncError  *prometheus.GaugeVec // stage, commit: when the last failed sync failed, while it is not resolved
	DefinitionsOK  prometheus.Gauge
	SourceOK       prometheus.Gauge
	ApprovalsTotal prometheus.Counter
	Leader         prometheus.Gauge // 1 while this replica leads (or runs alone)
	BackendChanged prometheus.Gauge // 1 while the branch head's backend block is not the backend in use
	Webhooks       *prometheus.CounterVec
	PlanChanges    *prometheus.GaugeVec // action: the last plan's changes, applied or not
	PlannedAt      prometheus.Gauge     // when the last plan was made
}

// NewMetrics registers the metrics.
func NewMetrics() *Metrics {
	r := prometheus.NewRegistry()
	r.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m := &Metrics{
		Registry: r,
		Trials: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "trialform_trials", Help: "Trials in the state, by experiment and status.",
		}, []string{"experiment", "status"}),
		PlanSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "trialform_plan_duration_seconds", Help: "Time to refresh and plan.",
			Buckets: prometheus.ExponentialBuckets(0.01, 2, 14),
		}),
		ApplySeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "trialform_apply_duration_seconds", Help: "Time to apply a plan.",
			Buckets: prometheus.ExponentialBuckets(0.01, 2, 14),
		}),
		SyncedCommit: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "trialform_definitions_commit_info", Help: "1 for the commit whose definitions are in force.",
		}, []string{"commit"}),
		SyncedAt: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "trialform_last_sync_timestamp_seconds", Help: "When the last git sync succeeded (Unix time).",
		}),
		FetchedCommit: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "trialform_fetched_commit_info", Help: "1 for the branch head last fetched (in force or not).",
		}, []string{"commit"}),
		Held: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "trialform_held_changes", Help: "Experiments whose destructive change is held until approved: trials it would tear down.",
		}, []string{"experiment", "spec_hash"}),
		SyncErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "trialform_sync_errors_total", Help: "Failed passes, by stage (git, definitions, backend, lock, state, plan, apply).",
		}, []string{"stage"}),
		LastSyncError: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "trialform_last_sync_error_timestamp_seconds", Help: "When the last failed sync failed (Unix time), by stage and the commit it concerns; absent once a later sync of that stage succeeded.",
		}, []string{"stage", "commit"}),
		DefinitionsOK: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "trialform_definitions_valid", Help: "1 when the branch head's definitions validate, 0 when they do not (the last good ones, if any, stay in force).",
		}),
		SourceOK: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "trialform_source_reachable", Help: "1 when the last fetch succeeded.",
		}),
		ApprovalsTotal: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "trialform_approvals_total", Help: "Approved held changes applied.",
		}),
		Leader: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "trialform_controller_leader", Help: "1 while this replica plans and applies (the leader, or the only replica), 0 while it stands by.",
		}),
	}
	m.BackendChanged = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "trialform_backend_changed", Help: "1 while the branch head's backend block differs from the backend the controller opened (its definitions are not in force; restart needed), else 0.",
	})
	m.Webhooks = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "trialform_webhook_requests_total", Help: "POST /hook requests, by result (sync, ignored: another branch, unauthorized, off: no secret configured).",
	}, []string{"result"})
	m.PlanChanges = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "trialform_plan_changes", Help: "The last plan's changes, by action (create, resume, teardown: trials; update: experiments created, updated or deleted), applied or not (held, -policy plan-only).",
	}, []string{"action"})
	m.PlannedAt = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "trialform_last_plan_timestamp_seconds", Help: "When the last plan was made (Unix time).",
	})
	r.MustRegister(m.BackendChanged, m.Webhooks, m.PlanChanges, m.PlannedAt)
	r.MustRegister(m.Trials, m.PlanSeconds, m.ApplySeconds, m.SyncedCommit, m.SyncedAt, m.FetchedCommit, m.Held, m.SyncErrors, m.LastSyncError, m.DefinitionsOK, m.SourceOK, m.ApprovalsTotal, m.Leader)
	for _, s := range []string{"git", "definitions", "backend", "lock", "state", "plan", "apply"} {
		m.SyncErrors.WithLabelValues(s)
	}
	return m
}

// Handler serves /metrics.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{Registry: m.Registry})
}

// SetCommit records the commit in force.
func (m *Metrics) SetCommit(g *prometheus.GaugeVec, commit string) {
	g.Reset()
	g.WithLabelValues(commit).Set(1)
}

// SetPlan records the last plan's changes and when it was made.
func (m *Metrics) SetPlan(s plan.Summary, at time.Time) {
	m.PlanChanges.WithLabelValues("create").Set(float64(s.Create))
	m.PlanChanges.WithLabelValues("resume").Set(float64(s.Resume))
	m.PlanChanges.WithLabelValues("teardown").Set(float64(s.Teardown))
	m.PlanChanges.WithLabelValues("update").Set(float64(s.Update))
	m.PlannedAt.Set(float64(at.UnixNano()) / 1e9)
}

// SetHeld records the held changes.
func (m *Metrics) SetHeld(held []Held) {
	m.Held.Reset()
	for _, h := range held {
		n := h.Teardowns
		if h.Removed {
			n++
		}
		m.Held.WithLabelValues(h.Experiment, h.SpecHash).Set(float64(n))
	}
}

// SetTrials records the trial counts (experiment → status → count).
func (m *Metrics) SetTrials(counts map[string]map[string]int) {
	m.Trials.Reset()
	for exp, byStatus := range counts {
		for st, n := range byStatus {
			m.Trials.WithLabelValues(exp, st).Set(float64(n))
		}
	}
}

// Since observes the seconds since t on h.
func Since(h prometheus.Histogram, t time.Time) { h.Observe(time.Since(t).Seconds()) }

// SetLastSyncError records a failed sync of stage about commit at t.
func (m *Metrics) SetLastSyncError(stage, commit string, t time.Time) {
	m.LastSyncError.DeletePartialMatch(prometheus.Labels{"stage": stage})
	m.LastSyncError.WithLabelValues(stage, commit).Set(float64(t.UnixNano()) / 1e9)
}

// ClearLastSyncError forgets stage's failed sync once one succeeded.
func (m *Metrics) ClearLastSyncError(stage string) {
	m.LastSyncError.DeletePartialMatch(prometheus.Labels{"stage": stage})
}
