// Package openpaitest is a fake OpenPAI REST server (API v2) for tests: it
// follows the documented request and response shapes of the calls the
// openpai platform makes, checks the bearer token exactly, runs each job's
// commands as a local /bin/sh process (cloudtest.Runner) and injects
// faults (cloudtest.Faults).
package openpaitest

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"

	"github.com/trialform/trialform/providers/cloudjob/cloudtest"
)

// Server is one fake OpenPAI cluster with one user.
type Server struct {
	User, Token string
	Runner      *cloudtest.Runner
	Faults      *cloudtest.Faults
	URL         string

	srv  *httptest.Server
	mu   sync.Mutex
	jobs map[string]*job // by name
	// Submits counts accepted job submissions (a second job of one name is
	// refused, so this is the number of jobs created).
	submits int
}

type job struct {
	name, user string
	config     []byte
	stopped    bool
}

// New starts a fake for user with token; Close stops it and its jobs.
func New(user, token string) *Server {
	s := &Server{User: user, Token: token, Runner: cloudtest.NewRunner(), Faults: &cloudtest.Faults{}, jobs: map[string]*job{}}
	s.srv = httptest.NewServer(s.Faults.Wrap(http.HandlerFunc(s.serve)))
	s.URL = s.srv.URL
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

// Vanish makes the cluster forget a job (killing it), as a cluster whose
// job history was lost does.
func (s *Server) Vanish(name string) {
	s.mu.Lock()
	delete(s.jobs, name)
	s.mu.Unlock()
	s.Runner.Forget(name)
}

// JobNames lists the jobs the cluster knows.
func (s *Server) JobNames() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for n := range s.jobs {
		out = append(out, n)
	}
	return out
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

func apiError(w http.ResponseWriter, code int, name, msg string) {
	writeJSON(w, code, map[string]string{"code": name, "message": msg})
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Authorization") != "Bearer "+s.Token {
		apiError(w, http.StatusUnauthorized, "UnauthorizedUserError", "Guest is not allowed to do this operation.")
		return
	}
	path := strings.TrimPrefix(r.URL.Path, "/api/v2/jobs")
	if path == r.URL.Path {
		apiError(w, http.StatusNotFound, "NotFoundError", "no such API")
		return
	}
	switch {
	case path == "" || path == "/":
		switch r.Method {
		case http.MethodPost:
			s.submit(w, r)
		case http.MethodGet:
			s.list(w, r)
		default:
			apiError(w, http.StatusMethodNotAllowed, "MethodNotAllowed", r.Method)
		}
		return
	}
	rest := strings.TrimPrefix(path, "/")
	id, sub, _ := strings.Cut(rest, "/")
	user, name, ok := strings.Cut(id, "~")
	s.mu.Lock()
	j := s.jobs[name]
	s.mu.Unlock()
	if !ok || j == nil || j.user != user {
		apiError(w, http.StatusNotFound, "NoJobError", "Job "+id+" is not found.")
		return
	}
	switch {
	case sub == "" && r.Method == http.MethodGet:
		s.get(w, j)
	case sub == "config" && r.Method == http.MethodGet:
		w.Header().Set("Content-Type", "text/yaml")
		_, _ = w.Write(j.config)
	case sub == "executionType" && r.Method == http.MethodPut:
		var body struct {
			Value string `json:"value"`
		}
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil || (body.Value != "STOP" && body.Value != "START") {
			apiError(w, http.StatusBadRequest, "InvalidParametersError", `body must be {"value": "STOP"} or {"value": "START"}`)
			return
		}
		if body.Value == "STOP" {
			s.mu.Lock()
			j.stopped = true
			s.mu.Unlock()
			go s.Runner.Stop(name)
		}
		writeJSON(w, http.StatusAccepted, map[string]any{"message": "execute job " + name + " successfully"})
	default:
		apiError(w, http.StatusNotFound, "NotFoundError", "no such API")
	}
}

type protocol struct {
	ProtocolVersion any                 `yaml:"protocolVersion"`
	Name            string              `yaml:"name"`
	Type            string              `yaml:"type"`
	Prerequisites   []map[string]string `yaml:"prerequisites"`
	TaskRoles       map[string]struct {
		Instances           int      `yaml:"instances"`
		DockerImage         string   `yaml:"dockerImage"`
		Commands            []string `yaml:"commands"`
		ResourcePerInstance struct {
			CPU      int `yaml:"cpu"`
			MemoryMB int `yaml:"memoryMB"`
			GPU      int `yaml:"gpu"`
		} `yaml:"resourcePerInstance"`
	} `yaml:"taskRoles"`
}

func (s *Server) submit(w http.ResponseWriter, r *http.Request) {
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/yaml") && !strings.HasPrefix(ct, "application/json") {
		apiError(w, http.StatusBadRequest, "InvalidProtocolError", "Content-Type must be text/yaml")
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	var p protocol
	if err := yaml.Unmarshal(body, &p); err != nil {
		apiError(w, http.StatusBadRequest, "InvalidProtocolError", err.Error())
		return
	}
	if p.ProtocolVersion == nil || p.Name == "" || p.Type != "job" || len(p.TaskRoles) != 1 || len(p.Prerequisites) == 0 {
		apiError(w, http.StatusBadRequest, "InvalidProtocolError", "protocolVersion, name, type: job, prerequisites and taskRoles are required")
		return
	}
	var cmds []string
	for _, tr := range p.TaskRoles {
		if tr.Instances != 1 || len(tr.Commands) == 0 || tr.ResourcePerInstance.CPU < 1 || tr.ResourcePerInstance.MemoryMB < 1 {
			apiError(w, http.StatusBadRequest, "InvalidProtocolError", "a task role needs instances, commands, cpu and memoryMB")
			return
		}
		cmds = tr.Commands
	}
	s.mu.Lock()
	if _, dup := s.jobs[p.Name]; dup {
		s.mu.Unlock()
		apiError(w, http.StatusConflict, "ConflictJobError", "Job name "+p.Name+" already exists.")
		return
	}
	s.jobs[p.Name] = &job{name: p.Name, user: s.User, config: body}
	s.submits++
	s.mu.Unlock()
	// OpenPAI runs a task role's commands as one shell script.
	if err := s.Runner.Start(p.Name, strings.Join(cmds, "\n"), nil, "/"); err != nil {
		apiError(w, http.StatusInternalServerError, "UnknownError", err.Error())
		return
	}
	writeJSON(w, http.StatusAccepted, map[string]any{"status": 202, "message": "update job " + p.Name + " successfully"})
}

// paiStates are OpenPAI's job states.
var paiStates = cloudtest.StateNames{Unknown: "UNKNOWN", Waiting: "WAITING", Running: "RUNNING",
	Stopping: "STOPPING", Succeeded: "SUCCEEDED", Failed: "FAILED", Stopped: "STOPPED"}

func (s *Server) state(j *job) (string, cloudtest.Status) {
	st, ok := s.Runner.Status(j.name)
	s.mu.Lock()
	stopped := j.stopped
	s.mu.Unlock()
	return paiStates.Name(st, ok, stopped), st
}

func (s *Server) get(w http.ResponseWriter, j *job) {
	state, st := s.state(j)
	status := map[string]any{"username": j.user, "state": state, "executionType": "START", "createdTime": st.Started.UnixMilli(),
		"launchedTime": 0, "completedTime": 0, "appExitCode": nil, "appExitDiagnostics": ""}
	if j.stopped {
		status["executionType"] = "STOP"
	}
	if !st.Started.IsZero() {
		status["launchedTime"] = st.Started.UnixMilli()
	}
	if st.Done() {
		status["completedTime"] = st.Ended.UnixMilli()
		status["appExitCode"] = st.ExitCode
		if state == "FAILED" {
			status["appExitDiagnostics"] = "UserCommandFailed"
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"name": j.name, "jobStatus": status,
		"taskRoles": map[string]any{"main": map[string]any{"taskStatuses": []any{}}}})
}

func (s *Server) list(w http.ResponseWriter, r *http.Request) {
	user := r.URL.Query().Get("username")
	s.mu.Lock()
	var js []*job
	for _, j := range s.jobs {
		if user == "" || j.user == user {
			js = append(js, j)
		}
	}
	s.mu.Unlock()
	out := []map[string]any{}
	for _, j := range js {
		state, _ := s.state(j)
		out = append(out, map[string]any{"name": j.name, "username": j.user, "state": state})
	}
	writeJSON(w, http.StatusOK, out)
}
