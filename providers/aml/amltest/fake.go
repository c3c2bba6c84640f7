// Package amltest is a fake Azure Machine Learning workspace for tests,
// served over TLS: Microsoft Entra ID's token endpoint (OpenID discovery
// and the client-credentials grant, checking the client secret exactly),
// the ARM workspace, environment-version and jobs calls of api-version
// 2023-04-01 (checking the bearer token exactly), and the artifact
// service's contentinfo call with a content URI that serves a run's
// user_logs/std_log.txt by byte range. It follows the documented request
// and response shapes of the calls the aml platform makes, runs each
// command job as a local /bin/sh process (cloudtest.Runner) and injects
// faults (cloudtest.Faults).
package amltest

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/trialform/trialform/providers/cloudjob/cloudtest"
)

// Server is one fake tenant with one service principal and one workspace.
type Server struct {
	Tenant, ClientID, Secret string
	Subscription, Group, WS  string
	// Datastores maps a datastore name to the local directory a job's
	// ReadWriteMount input of it is.
	Datastores map[string]string
	Runner     *cloudtest.Runner
	Faults     *cloudtest.Faults
	URL        string
	// Client trusts the server's certificate.
	Client *http.Client

	srv    *httptest.Server
	token  string
	mu     sync.Mutex
	jobs   map[string]*job
	envs   map[string]json.RawMessage
	tokens int
	// submits counts jobs created.
	submits int
}

type job struct {
	name     string
	body     map[string]any // the PUT's properties
	canceled bool
	created  time.Time
}

// New starts a fake; Close stops it and its jobs.
func New(tenant, clientID, secret, subscription, group, ws string) *Server {
	b := make([]byte, 24)
	_, _ = rand.Read(b)
	s := &Server{Tenant: tenant, ClientID: clientID, Secret: secret, Subscription: subscription, Group: group, WS: ws,
		Datastores: map[string]string{}, Runner: cloudtest.NewRunner(), Faults: &cloudtest.Faults{},
		token: "eyJ0eXAiOiJKV1QifQ." + hex.EncodeToString(b), jobs: map[string]*job{}, envs: map[string]json.RawMessage{}}
	s.srv = httptest.NewTLSServer(s.Faults.Wrap(http.HandlerFunc(s.serve)))
	s.URL = s.srv.URL
	s.Client = s.srv.Client()
	return s
}

// Close stops the server and kills the jobs.
func (s *Server) Close() {
	s.srv.CloseClientConnections()
	s.srv.Close()
	s.Runner.Close()
}

// CertFile writes the server's certificate (PEM) to a file in dir, for a
// process that trusts it through SSL_CERT_FILE.
func (s *Server) CertFile(dir string) (string, error) {
	p := filepath.Join(dir, "fake-aml.pem")
	b := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.srv.Certificate().Raw})
	return p, os.WriteFile(p, b, 0o644)
}

// Submits returns how many jobs were created.
func (s *Server) Submits() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.submits
}

// Tokens returns how many tokens Entra ID issued.
func (s *Server) Tokens() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tokens
}

// JobNames lists the jobs the workspace knows.
func (s *Server) JobNames() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for n := range s.jobs {
		out = append(out, n)
	}
	return out
}

// Vanish makes the workspace forget a job (killing it).
func (s *Server) Vanish(name string) {
	s.mu.Lock()
	delete(s.jobs, name)
	s.mu.Unlock()
	s.Runner.Forget(name)
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// armError is ARM's error body.
func armError(w http.ResponseWriter, code int, name, msg string) {
	writeJSON(w, code, map[string]any{"error": map[string]any{"code": name, "message": msg}})
}

func (s *Server) wsPath() string {
	return "/subscriptions/" + s.Subscription + "/resourceGroups/" + s.Group + "/providers/Microsoft.MachineLearningServices/workspaces/" + s.WS
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	p := r.URL.Path
	switch {
	case strings.HasPrefix(p, "/"+s.Tenant+"/"):
		s.aad(w, r, strings.TrimPrefix(p, "/"+s.Tenant))
		return
	case strings.HasPrefix(p, "/blob/"):
		s.blob(w, r, strings.TrimPrefix(p, "/blob/"))
		return
	}
	if r.Header.Get("Authorization") != "Bearer "+s.token {
		w.Header().Set("WWW-Authenticate", `Bearer authorization_uri="`+s.URL+`", error="invalid_token", error_description="The access token is invalid"`)
		armError(w, http.StatusUnauthorized, "InvalidAuthenticationToken", "The access token is invalid.")
		return
	}
	if rest, ok := strings.CutPrefix(p, "/artifact/v2.0"+s.wsPath()+"/artifacts/contentinfo/ExperimentRun/dcid."); ok {
		s.contentInfo(w, r, rest)
		return
	}
	if r.URL.Query().Get("api-version") != "2023-04-01" {
		armError(w, http.StatusBadRequest, "MissingApiVersionParameter", "The api-version query parameter (?api-version=) is required for all requests.")
		return
	}
	rest, ok := strings.CutPrefix(p, s.wsPath())
	if !ok {
		armError(w, http.StatusNotFound, "ResourceNotFound", "The Resource under "+p+" was not found.")
		return
	}
	switch {
	case rest == "" && r.Method == http.MethodGet:
		writeJSON(w, http.StatusOK, map[string]any{"id": s.wsPath(), "name": s.WS, "location": "fakeregion",
			"type": "Microsoft.MachineLearningServices/workspaces", "properties": map[string]any{"provisioningState": "Succeeded"}})
	case strings.HasPrefix(rest, "/environments/") && r.Method == http.MethodPut:
		var body struct {
			Properties struct {
				Image string `json:"image"`
			} `json:"properties"`
		}
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil || body.Properties.Image == "" {
			armError(w, http.StatusBadRequest, "UserError", "properties.image is required")
			return
		}
		s.mu.Lock()
		_, had := s.envs[rest]
		s.envs[rest] = json.RawMessage(`{}`)
		s.mu.Unlock()
		code := http.StatusCreated
		if had {
			code = http.StatusOK
		}
		writeJSON(w, code, map[string]any{"id": s.wsPath() + rest, "properties": map[string]any{"image": body.Properties.Image}})
	case rest == "/jobs" && r.Method == http.MethodGet:
		s.list(w, r)
	case strings.HasPrefix(rest, "/jobs/"):
		name, sub, _ := strings.Cut(strings.TrimPrefix(rest, "/jobs/"), "/")
		switch {
		case sub == "" && r.Method == http.MethodPut:
			s.put(w, r, name)
		case sub == "" && r.Method == http.MethodGet:
			s.get(w, name)
		case sub == "" && r.Method == http.MethodDelete:
			s.mu.Lock()
			_, had := s.jobs[name]
			delete(s.jobs, name)
			s.mu.Unlock()
			if !had {
				w.WriteHeader(http.StatusNoContent)
				return
			}
			go s.Runner.Forget(name)
			w.Header().Set("Location", s.URL+"/operations/delete-"+name)
			w.WriteHeader(http.StatusAccepted)
		case sub == "cancel" && r.Method == http.MethodPost:
			s.mu.Lock()
			j := s.jobs[name]
			if j != nil {
				j.canceled = true
			}
			s.mu.Unlock()
			if j == nil {
				armError(w, http.StatusNotFound, "UserError", "Job "+name+" not found.")
				return
			}
			go s.Runner.Stop(name)
			w.Header().Set("Location", s.URL+"/operations/cancel-"+name)
			w.WriteHeader(http.StatusAccepted)
		default:
			armError(w, http.StatusMethodNotAllowed, "MethodNotAllowed", r.Method+" "+rest)
		}
	default:
		armError(w, http.StatusNotFound, "ResourceNotFound", "The Resource under "+p+" was not found.")
	}
}

// aad serves the tenant's OpenID configuration and token endpoint.
func (s *Server) aad(w http.ResponseWriter, r *http.Request, p string) {
	base := s.URL + "/" + s.Tenant
	switch p {
	case "/v2.0/.well-known/openid-configuration":
		writeJSON(w, http.StatusOK, map[string]any{"token_endpoint": base + "/oauth2/v2.0/token", "authorization_endpoint": base + "/oauth2/v2.0/authorize",
			"issuer": base + "/v2.0", "device_authorization_endpoint": base + "/oauth2/v2.0/devicecode",
			"token_endpoint_auth_methods_supported": []string{"client_secret_post", "private_key_jwt", "client_secret_basic"}})
	case "/oauth2/v2.0/token":
		if r.Method != http.MethodPost || r.ParseForm() != nil {
			writeJSON(w, http.StatusBadRequest, map[string]any{"error": "invalid_request", "error_description": "AADSTS900144: The request body must contain the grant_type parameter."})
			return
		}
		f := r.PostForm
		switch {
		case f.Get("grant_type") != "client_credentials":
			writeJSON(w, http.StatusBadRequest, map[string]any{"error": "unsupported_grant_type", "error_description": "AADSTS70003: the grant type is not supported."})
		case f.Get("client_id") != s.ClientID:
			writeJSON(w, http.StatusBadRequest, map[string]any{"error": "unauthorized_client", "error_description": "AADSTS700016: Application with identifier '" + f.Get("client_id") + "' was not found in the directory.", "error_codes": []int{700016}})
		case f.Get("client_secret") != s.Secret:
			writeJSON(w, http.StatusUnauthorized, map[string]any{"error": "invalid_client", "error_description": "AADSTS7000215: Invalid client secret provided. Ensure the secret being sent in the request is the client secret value, not the client secret ID, for a secret added to app '" + s.ClientID + "'.", "error_codes": []int{7000215}})
		case !hasScope(f.Get("scope"), "https://management.azure.com/.default"):
			writeJSON(w, http.StatusBadRequest, map[string]any{"error": "invalid_scope", "error_description": "AADSTS70011: The provided value for the input parameter 'scope' is not valid."})
		default:
			s.mu.Lock()
			s.tokens++
			s.mu.Unlock()
			writeJSON(w, http.StatusOK, map[string]any{"token_type": "Bearer", "expires_in": 3599, "ext_expires_in": 3599, "access_token": s.token})
		}
	default:
		writeJSON(w, http.StatusNotFound, map[string]any{"error": "invalid_request", "error_description": "AADSTS90002: no such endpoint."})
	}
}

type jobBody struct {
	Properties struct {
		JobType              string            `json:"jobType"`
		Command              string            `json:"command"`
		ComputeID            string            `json:"computeId"`
		EnvironmentID        string            `json:"environmentId"`
		EnvironmentVariables map[string]string `json:"environmentVariables"`
		Inputs               map[string]struct {
			JobInputType string `json:"jobInputType"`
			URI          string `json:"uri"`
			Mode         string `json:"mode"`
		} `json:"inputs"`
	} `json:"properties"`
}

func (s *Server) put(w http.ResponseWriter, r *http.Request, name string) {
	var raw map[string]any
	if err := json.NewDecoder(r.Body).Decode(&raw); err != nil {
		armError(w, http.StatusBadRequest, "UserError", "the body is not JSON: "+err.Error())
		return
	}
	b, _ := json.Marshal(raw)
	var body jobBody
	_ = json.Unmarshal(b, &body)
	pr := body.Properties
	if pr.JobType != "Command" || pr.Command == "" || pr.EnvironmentID == "" || !strings.HasPrefix(pr.ComputeID, s.wsPath()+"/computes/") {
		armError(w, http.StatusBadRequest, "UserError", "a command job needs jobType Command, command, environmentId and the workspace's computeId")
		return
	}
	props, _ := raw["properties"].(map[string]any)
	s.mu.Lock()
	if j, ok := s.jobs[name]; ok {
		same := fmt.Sprint(j.body["command"]) == pr.Command
		s.mu.Unlock()
		if !same {
			armError(w, http.StatusConflict, "UserError", "A job with name "+name+" already exists and its command cannot be changed.")
			return
		}
		s.get(w, name)
		return
	}
	cmd := pr.Command
	for in, v := range pr.Inputs {
		ds := strings.TrimSuffix(strings.TrimPrefix(v.URI, "azureml://datastores/"), "/paths/")
		dir, ok := s.Datastores[ds]
		if v.JobInputType != "uri_folder" || v.Mode != "ReadWriteMount" || !ok {
			s.mu.Unlock()
			armError(w, http.StatusBadRequest, "UserError", "input "+in+": no datastore "+ds+" (or not a uri_folder ReadWriteMount)")
			return
		}
		cmd = strings.ReplaceAll(cmd, "${{inputs."+in+"}}", dir)
	}
	s.jobs[name] = &job{name: name, body: props, created: time.Now().UTC()}
	s.submits++
	s.mu.Unlock()
	if err := s.Runner.Start(name, cmd, pr.EnvironmentVariables, "/"); err != nil {
		armError(w, http.StatusInternalServerError, "InternalServerError", err.Error())
		return
	}
	s.getCode(w, name, http.StatusCreated)
}

// amlStates are AML's job statuses.
var amlStates = cloudtest.StateNames{Unknown: "NotResponding", Waiting: "Queued", Running: "Running",
	Stopping: "CancelRequested", Succeeded: "Completed", Failed: "Failed", Stopped: "Canceled"}

func (s *Server) status(j *job) string {
	st, ok := s.Runner.Status(j.name)
	s.mu.Lock()
	canceled := j.canceled
	s.mu.Unlock()
	return amlStates.Name(st, ok, canceled)
}

func (s *Server) resource(j *job) map[string]any {
	props := map[string]any{}
	s.mu.Lock()
	for k, v := range j.body {
		props[k] = v
	}
	s.mu.Unlock()
	props["status"] = s.status(j)
	props["services"] = map[string]any{"Studio": map[string]any{"jobServiceType": "Studio",
		"endpoint": "https://ml.azure.com/runs/" + j.name + "?wsid=" + s.wsPath()}}
	sd := map[string]any{"createdAt": j.created.Format(time.RFC3339Nano), "createdBy": s.ClientID, "createdByType": "Application",
		"lastModifiedAt": j.created.Format(time.RFC3339Nano)}
	if st, ok := s.Runner.Status(j.name); ok && st.Done() {
		sd["lastModifiedAt"] = st.Ended.UTC().Format(time.RFC3339Nano)
	}
	return map[string]any{"id": s.wsPath() + "/jobs/" + j.name, "name": j.name, "type": "Microsoft.MachineLearningServices/workspaces/jobs",
		"properties": props, "systemData": sd}
}

func (s *Server) get(w http.ResponseWriter, name string) { s.getCode(w, name, http.StatusOK) }

func (s *Server) getCode(w http.ResponseWriter, name string, code int) {
	s.mu.Lock()
	j := s.jobs[name]
	s.mu.Unlock()
	if j == nil {
		armError(w, http.StatusNotFound, "UserError", "Job "+name+" not found.")
		return
	}
	writeJSON(w, code, s.resource(j))
}

// list pages the jobs two at a time (nextLink), those with the tag key
// when ?tag= is given.
func (s *Server) list(w http.ResponseWriter, r *http.Request) {
	tag := r.URL.Query().Get("tag")
	skip, _ := strconv.Atoi(r.URL.Query().Get("$skipToken"))
	s.mu.Lock()
	var names []string
	for n, j := range s.jobs {
		tags, _ := j.body["tags"].(map[string]any)
		if _, ok := tags[tag]; tag == "" || ok {
			names = append(names, n)
		}
	}
	s.mu.Unlock()
	sort.Strings(names)
	out := []any{}
	next := ""
	for i := skip; i < len(names); i++ {
		if i == skip+2 {
			q := r.URL.Query()
			q.Set("$skipToken", strconv.Itoa(i))
			next = s.URL + r.URL.Path + "?" + q.Encode()
			break
		}
		s.mu.Lock()
		j := s.jobs[names[i]]
		s.mu.Unlock()
		if j != nil {
			out = append(out, s.resource(j))
		}
	}
	resp := map[string]any{"value": out}
	if next != "" {
		resp["nextLink"] = next
	}
	writeJSON(w, http.StatusOK, resp)
}

// contentInfo answers where a run's artifact is: a content URI carrying
// its own signature (as a blob SAS URI does).
func (s *Server) contentInfo(w http.ResponseWriter, r *http.Request, rest string) {
	name, path, _ := strings.Cut(rest, "/")
	s.mu.Lock()
	j := s.jobs[name]
	s.mu.Unlock()
	if j == nil || path != "user_logs/std_log.txt" {
		armError(w, http.StatusNotFound, "UserError", "artifact "+rest+" not found")
		return
	}
	if st, ok := s.Runner.Status(name); !ok || st.State == cloudtest.Waiting {
		armError(w, http.StatusNotFound, "UserError", "artifact "+rest+" not found")
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"path": path, "origin": "ExperimentRun", "container": "dcid." + name,
		"contentUri": s.URL + "/blob/" + name + "/" + path + "?sv=2021-08-06&sig=" + s.sig(name)})
}

func (s *Server) sig(name string) string {
	return hex.EncodeToString([]byte(name + s.token[len(s.token)-8:]))
}

// blob serves a log's bytes from a Range header's start (206), 416 when
// nothing lies past it.
func (s *Server) blob(w http.ResponseWriter, r *http.Request, rest string) {
	name, _, _ := strings.Cut(rest, "/")
	if r.URL.Query().Get("sig") != s.sig(name) {
		w.WriteHeader(http.StatusForbidden)
		_, _ = w.Write([]byte("<Error><Code>AuthenticationFailed</Code></Error>"))
		return
	}
	b, ok := s.Runner.Log(name, 0)
	if !ok {
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte("<Error><Code>BlobNotFound</Code></Error>"))
		return
	}
	from := int64(0)
	if rg := r.Header.Get("Range"); rg != "" {
		v, ok := strings.CutPrefix(rg, "bytes=")
		n, err := strconv.ParseInt(strings.TrimSuffix(v, "-"), 10, 64)
		if !ok || err != nil || n < 0 {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		from = n
	}
	if from >= int64(len(b)) {
		w.Header().Set("Content-Range", fmt.Sprintf("bytes */%d", len(b)))
		w.WriteHeader(http.StatusRequestedRangeNotSatisfiable)
		return
	}
	w.Header().Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", from, len(b)-1, len(b)))
	w.WriteHeader(http.StatusPartialContent)
	_, _ = w.Write(b[from:])
}

// hasScope reports whether a space-separated scope list holds want (MSAL
// adds openid, profile and offline_access to what the client asks).
func hasScope(list, want string) bool {
	for _, sc := range strings.Fields(list) {
		if sc == want {
			return true
		}
	}
	return false
}
