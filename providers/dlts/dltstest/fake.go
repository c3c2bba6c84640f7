// Package dltstest is a fake DLTS dashboard API for tests: the calls the
// dlts platform makes, in the documented shapes (NNI's dlts training
// service and DLWorkspace's dashboard routes), with the email and password
// query parameters checked exactly; each job's cmd runs as a local /bin/sh
// process (cloudtest.Runner) with its env list, and faults are injected by
// cloudtest.Faults.
package dltstest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/trialform/trialform/providers/cloudjob/cloudtest"
)

// Server is one fake DLTS cluster.
type Server struct {
	Email, Password, Team, Cluster string
	GPUType                        string // what the team's cluster metadata lists
	Runner                         *cloudtest.Runner
	Faults                         *cloudtest.Faults
	URL                            string // the dashboard, with a trailing slash

	srv     *httptest.Server
	mu      sync.Mutex
	jobs    map[string]*job // by id
	next    int
	submits int
}

type job struct {
	id     string
	params map[string]any
	killed bool
}

// New starts a fake.
func New(email, password, team string) *Server {
	s := &Server{Email: email, Password: password, Team: team, Cluster: ".default", GPUType: "P40",
		Runner: cloudtest.NewRunner(), Faults: &cloudtest.Faults{}, jobs: map[string]*job{}}
	s.srv = httptest.NewServer(s.Faults.Wrap(http.HandlerFunc(s.serve)))
	s.URL = s.srv.URL + "/"
	return s
}

// Close stops the server and kills the jobs.
func (s *Server) Close() {
	s.srv.CloseClientConnections()
	s.srv.Close()
	s.Runner.Close()
}

// Submits returns how many jobs were created.
func (s *Server) Submits() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.submits
}

// JobIDs lists the jobs the cluster knows.
func (s *Server) JobIDs() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for id := range s.jobs {
		out = append(out, id)
	}
	sort.Strings(out)
	return out
}

// Vanish makes the cluster forget a job (killing it).
func (s *Server) Vanish(id string) {
	s.mu.Lock()
	delete(s.jobs, id)
	s.mu.Unlock()
	s.Runner.Forget(id)
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if q.Get("email") != s.Email || q.Get("password") != s.Password {
		http.Error(w, "Forbidden", http.StatusForbidden)
		return
	}
	p := strings.TrimPrefix(r.URL.Path, "/")
	parts := strings.Split(p, "/")
	switch {
	// api/teams/TEAM/clusters/CLUSTER
	case r.Method == http.MethodGet && len(parts) == 5 && parts[0] == "api" && parts[1] == "teams" && parts[3] == "clusters":
		if parts[2] != s.Team || parts[4] != s.Cluster {
			http.Error(w, "Not Found", http.StatusNotFound)
			return
		}
		meta, _ := json.Marshal(map[string]any{s.GPUType: map[string]int{"num_gpu_per_node": 4}})
		writeJSON(w, http.StatusOK, map[string]any{"metadata": string(meta)})
	// api/clusters/CLUSTER/jobs
	case r.Method == http.MethodPost && len(parts) == 4 && parts[0] == "api" && parts[1] == "clusters" && parts[3] == "jobs":
		s.submit(w, r, parts[2])
	// api/v2/clusters/CLUSTER/teams/TEAM/jobs
	case r.Method == http.MethodGet && len(parts) == 7 && parts[1] == "v2" && parts[4] == "teams" && parts[6] == "jobs":
		s.list(w, r, parts[5])
	// api/v2/clusters/CLUSTER/jobs/ID and .../log
	case r.Method == http.MethodGet && len(parts) >= 6 && parts[1] == "v2" && parts[4] == "jobs":
		j := s.job(parts[5])
		if j == nil {
			http.Error(w, "Not Found", http.StatusNotFound)
			return
		}
		if len(parts) == 7 && parts[6] == "log" {
			b, _ := s.Runner.Log(j.id, 0)
			w.Header().Set("Content-Type", "text/plain")
			_, _ = w.Write(b)
			return
		}
		writeJSON(w, http.StatusOK, s.info(j))
	// api/clusters/CLUSTER/jobs/ID/status
	case r.Method == http.MethodPut && len(parts) == 6 && parts[1] == "clusters" && parts[5] == "status":
		j := s.job(parts[4])
		if j == nil {
			http.Error(w, "Not Found", http.StatusNotFound)
			return
		}
		var body struct {
			Status string `json:"status"`
		}
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil || body.Status != "killing" && body.Status != "pausing" && body.Status != "queued" {
			http.Error(w, "Bad Request", http.StatusBadRequest)
			return
		}
		if body.Status == "killing" {
			s.mu.Lock()
			j.killed = true
			s.mu.Unlock()
			go s.Runner.Stop(j.id)
		}
		writeJSON(w, http.StatusOK, map[string]string{"message": "job status changed"})
	default:
		http.Error(w, "Not Found", http.StatusNotFound)
	}
}

func (s *Server) job(id string) *job {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.jobs[id]
}

func (s *Server) submit(w http.ResponseWriter, r *http.Request, cluster string) {
	if cluster != s.Cluster {
		http.Error(w, "Not Found", http.StatusNotFound)
		return
	}
	var params map[string]any
	if err := json.NewDecoder(r.Body).Decode(&params); err != nil {
		http.Error(w, "Bad Request: "+err.Error(), http.StatusBadRequest)
		return
	}
	for _, k := range []string{"jobName", "team", "vcName", "userName", "image", "cmd", "gpuType", "jobType"} {
		if v, _ := params[k].(string); v == "" {
			http.Error(w, "Bad Request: "+k+" is required", http.StatusBadRequest)
			return
		}
	}
	if params["userName"] != s.Email || params["team"] != s.Team || params["gpuType"] != s.GPUType {
		http.Error(w, "Bad Request: userName, team or gpuType", http.StatusBadRequest)
		return
	}
	env := map[string]string{}
	list, _ := params["env"].([]any)
	for _, e := range list {
		m, _ := e.(map[string]any)
		n, _ := m["name"].(string)
		v, _ := m["value"].(string)
		env[n] = v
	}
	s.mu.Lock()
	s.next++
	s.submits++
	id := fmt.Sprintf("%08x-%04d", time.Now().UnixNano()&0xffffffff, s.next)
	s.jobs[id] = &job{id: id, params: params}
	s.mu.Unlock()
	cmd, _ := params["cmd"].(string)
	if err := s.Runner.Start(id, cmd, env, "/"); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"jobId": id})
}

func (s *Server) info(j *job) map[string]any {
	st, _ := s.Runner.Status(j.id)
	status := map[cloudtest.State]string{cloudtest.Waiting: "queued", cloudtest.Running: "running", cloudtest.Succeeded: "finished",
		cloudtest.Failed: "failed", cloudtest.Stopped: "killed"}[st.State]
	s.mu.Lock()
	if j.killed && st.State == cloudtest.Running {
		status = "killing"
	}
	s.mu.Unlock()
	detail := map[string]any{}
	if !st.Started.IsZero() {
		detail["startedAt"] = st.Started.UTC().Format(time.RFC3339Nano)
	}
	if st.Done() {
		detail["finishedAt"] = st.Ended.UTC().Format(time.RFC3339Nano)
	}
	return map[string]any{"jobId": j.id, "jobName": j.params["jobName"], "userName": j.params["userName"], "vcName": j.params["vcName"],
		"jobStatus": status, "jobParams": j.params, "jobStatusDetail": []any{detail}}
}

func (s *Server) list(w http.ResponseWriter, r *http.Request, team string) {
	s.mu.Lock()
	var js []*job
	for _, j := range s.jobs {
		if j.params["team"] == team {
			js = append(js, j)
		}
	}
	s.mu.Unlock()
	out := []any{}
	for _, j := range js {
		out = append(out, s.info(j))
	}
	writeJSON(w, http.StatusOK, out)
}
