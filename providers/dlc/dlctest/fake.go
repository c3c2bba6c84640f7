// Package dlctest is a fake PAI-DLC OpenAPI (2020-12-03) server for tests:
// it follows the documented request and response shapes of CreateJob,
// GetJob, ListJobs, StopJob, DeleteJob and GetPodLogs, recomputes every
// request's ACS3-HMAC-SHA256 signature from the request as the service does
// (canonical request, string to sign, HMAC with the account's AccessKey
// secret) and refuses a wrong key with Alibaba's error body (Code,
// Message, RequestId), runs each job's UserCommand as a local /bin/sh
// process (cloudtest.Runner) and injects faults (cloudtest.Faults).
//
// Its answers to a refused key are 401 (unknown AccessKey ID) and 403
// (signature mismatch); the client classifies them by Alibaba's error code
// too, whatever the status.
package dlctest

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/trialform/trialform/providers/cloudjob/cloudtest"
)

// Version is the API version the fake serves.
const Version = "2020-12-03"

// Server is one fake DLC region with one account's AccessKey.
type Server struct {
	AccessKeyID, AccessKeySecret string
	// ListWithoutSettings makes ListJobs' items lack Settings (and so the
	// tags), as a service whose list answers only a summary would.
	ListWithoutSettings bool
	Runner              *cloudtest.Runner
	Faults              *cloudtest.Faults
	URL                 string

	srv     *httptest.Server
	mu      sync.Mutex
	jobs    map[string]*job // by JobId
	order   []string        // JobIds in creation order
	nonces  map[string]bool
	creates int
	refused int
	conns   int
	// throttleCodes: the next so many requests answer 400 with Alibaba's
	// Throttling.User code (as the gateway throttles), not 429.
	throttleCodes int
}

// ThrottleByCode makes the next n requests answer HTTP 400 with the code
// Throttling.User, Alibaba's way of throttling a user.
func (s *Server) ThrottleByCode(n int) {
	s.mu.Lock()
	s.throttleCodes = n
	s.mu.Unlock()
}

type job struct {
	id      string
	req     createJob
	created time.Time
	stopped bool
}

// New starts a fake for one AccessKey; Close stops it and its jobs.
func New(accessKeyID, accessKeySecret string) *Server {
	s := &Server{AccessKeyID: accessKeyID, AccessKeySecret: accessKeySecret, Runner: cloudtest.NewRunner(), Faults: &cloudtest.Faults{},
		jobs: map[string]*job{}, nonces: map[string]bool{}}
	s.srv = httptest.NewUnstartedServer(s.Faults.Wrap(http.HandlerFunc(s.serve)))
	s.srv.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			s.mu.Lock()
			s.conns++
			s.mu.Unlock()
		}
	}
	s.srv.Start()
	s.URL = s.srv.URL
	return s
}

// Close stops the server and kills the jobs.
func (s *Server) Close() {
	s.srv.CloseClientConnections()
	s.srv.Close()
	s.Runner.Close()
}

// Creates returns how many jobs CreateJob created.
func (s *Server) Creates() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.creates
}

// Conns returns how many connections clients opened.
func (s *Server) Conns() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.conns
}

// Refused returns how many requests failed the signature check.
func (s *Server) Refused() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.refused
}

// JobIDs lists the jobs the service knows, in creation order.
func (s *Server) JobIDs() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, id := range s.order {
		if s.jobs[id] != nil {
			out = append(out, id)
		}
	}
	return out
}

// DisplayNames returns every known job's DisplayName, in creation order.
func (s *Server) DisplayNames() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, id := range s.order {
		if j := s.jobs[id]; j != nil {
			out = append(out, j.req.DisplayName)
		}
	}
	return out
}

// Vanish makes the service forget a job (killing it).
func (s *Server) Vanish(id string) {
	s.mu.Lock()
	delete(s.jobs, id)
	s.mu.Unlock()
	s.Runner.Forget(id)
}

func requestID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	h := strings.ToUpper(hex.EncodeToString(b[:]))
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

func writeJSON(w http.ResponseWriter, code int, v map[string]any) {
	if _, ok := v["RequestId"]; !ok {
		v["RequestId"] = requestID()
	}
	w.Header().Set("Content-Type", "application/json;charset=utf-8")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// apiError answers in Alibaba's error shape.
func apiError(w http.ResponseWriter, code int, name, msg string) {
	writeJSON(w, code, map[string]any{"Code": name, "Message": msg, "HostId": "pai-dlc.fake.aliyuncs.com", "Recommend": "https://api.aliyun.com/troubleshoot?q=" + name})
}

// route is one documented operation: its x-acs-action, method and path.
func route(method, path string) (action, id, pod string, ok bool) {
	rest, found := strings.CutPrefix(path, "/api/v1/jobs")
	if !found {
		return "", "", "", false
	}
	if rest == "" || rest == "/" {
		switch method {
		case http.MethodPost:
			return "CreateJob", "", "", true
		case http.MethodGet:
			return "ListJobs", "", "", true
		}
		return "", "", "", false
	}
	parts := strings.Split(strings.TrimPrefix(rest, "/"), "/")
	switch {
	case len(parts) == 1 && method == http.MethodGet:
		return "GetJob", parts[0], "", true
	case len(parts) == 1 && method == http.MethodDelete:
		return "DeleteJob", parts[0], "", true
	case len(parts) == 2 && parts[1] == "stop" && method == http.MethodPost:
		return "StopJob", parts[0], "", true
	case len(parts) == 4 && parts[1] == "pods" && parts[3] == "logs" && method == http.MethodGet:
		return "GetPodLogs", parts[0], parts[2], true
	}
	return "", "", "", false
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	if st, code, msg := s.verify(r, body); st != 0 {
		s.mu.Lock()
		s.refused++
		s.mu.Unlock()
		apiError(w, st, code, msg)
		return
	}
	s.mu.Lock()
	throttle := s.throttleCodes > 0
	if throttle {
		s.throttleCodes--
	}
	s.mu.Unlock()
	if throttle {
		apiError(w, http.StatusBadRequest, "Throttling.User", "Request was denied due to user flow control.")
		return
	}
	action, id, pod, ok := route(r.Method, r.URL.Path)
	if !ok {
		apiError(w, http.StatusNotFound, "InvalidAction.NotFound", "Specified api is not found, please check your url and method.")
		return
	}
	if got := r.Header.Get("x-acs-action"); got != action {
		apiError(w, http.StatusBadRequest, "InvalidAction", fmt.Sprintf("x-acs-action %q does not match %s %s (%s).", got, r.Method, r.URL.Path, action))
		return
	}
	switch action {
	case "CreateJob":
		s.create(w, body)
	case "ListJobs":
		s.list(w, r)
	default:
		s.mu.Lock()
		j := s.jobs[id]
		s.mu.Unlock()
		if j == nil {
			apiError(w, http.StatusNotFound, "JobNotFound", "Job "+id+" is not found.")
			return
		}
		switch action {
		case "GetJob":
			writeJSON(w, http.StatusOK, s.info(j, true))
		case "StopJob":
			st, _ := s.Runner.Status(id)
			if st.Done() {
				apiError(w, http.StatusBadRequest, "InvalidJobStatus", "Job "+id+" has ended and cannot be stopped.")
				return
			}
			s.mu.Lock()
			j.stopped = true
			s.mu.Unlock()
			go s.Runner.Stop(id)
			writeJSON(w, http.StatusOK, map[string]any{"JobId": id})
		case "DeleteJob":
			s.Vanish(id)
			writeJSON(w, http.StatusOK, map[string]any{"JobId": id})
		case "GetPodLogs":
			s.logs(w, r, j, pod)
		}
	}
}

// verify recomputes the ACS3-HMAC-SHA256 signature: 0 when it is right,
// else the status, code and message of Alibaba's refusal.
func (s *Server) verify(r *http.Request, body []byte) (int, string, string) {
	auth := r.Header.Get("Authorization")
	alg, rest, _ := strings.Cut(auth, " ")
	if alg != "ACS3-HMAC-SHA256" {
		return http.StatusBadRequest, "IncompleteSignature", "The request signature does not conform to Aliyun standards (ACS3-HMAC-SHA256 expected)."
	}
	fields := map[string]string{}
	for _, kv := range strings.Split(rest, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(kv), "=")
		fields[k] = v
	}
	if fields["Credential"] == "" || fields["SignedHeaders"] == "" || fields["Signature"] == "" {
		return http.StatusBadRequest, "IncompleteSignature", "Authorization needs Credential, SignedHeaders and Signature."
	}
	if r.Header.Get("x-acs-version") != Version {
		return http.StatusBadRequest, "InvalidVersion", "Specified parameter Version is not valid: " + r.Header.Get("x-acs-version")
	}
	sum := sha256.Sum256(body)
	if r.Header.Get("x-acs-content-sha256") != hex.EncodeToString(sum[:]) {
		return http.StatusBadRequest, "InvalidParameter.ContentSha256", "x-acs-content-sha256 is not the SHA-256 of the body."
	}
	date, err := time.Parse("2006-01-02T15:04:05Z", r.Header.Get("x-acs-date"))
	if err != nil || time.Since(date).Abs() > 15*time.Minute {
		return http.StatusBadRequest, "InvalidTimeStamp.Expired", "x-acs-date is missing or not within 15 minutes of the server time."
	}
	signed := strings.Split(fields["SignedHeaders"], ";")
	need := map[string]bool{"host": true, "x-acs-action": true, "x-acs-version": true, "x-acs-date": true, "x-acs-signature-nonce": true, "x-acs-content-sha256": true}
	for _, h := range signed {
		delete(need, h)
	}
	if len(need) > 0 || !sort.StringsAreSorted(signed) {
		return http.StatusBadRequest, "IncompleteSignature", "SignedHeaders must list, sorted, host and the x-acs- headers."
	}
	if fields["Credential"] != s.AccessKeyID {
		return http.StatusUnauthorized, "InvalidAccessKeyId.NotFound", "Specified access key is not found."
	}
	var canon strings.Builder
	canon.WriteString(r.Method + "\n")
	path := r.URL.EscapedPath()
	if path == "" {
		path = "/"
	}
	canon.WriteString(path + "\n")
	canon.WriteString(canonicalQuery(r) + "\n")
	for _, h := range signed {
		var vals []string
		if h == "host" {
			vals = []string{r.Host}
		} else {
			for _, v := range r.Header.Values(h) {
				vals = append(vals, strings.TrimSpace(v))
			}
		}
		sort.Strings(vals)
		canon.WriteString(h + ":" + strings.Join(vals, ",") + "\n")
	}
	// Each canonical header ends with a newline, and a newline separates
	// them from the signed headers' list.
	canon.WriteString("\n" + fields["SignedHeaders"] + "\n")
	canon.WriteString(r.Header.Get("x-acs-content-sha256"))
	hashed := sha256.Sum256([]byte(canon.String()))
	mac := hmac.New(sha256.New, []byte(s.AccessKeySecret))
	mac.Write([]byte("ACS3-HMAC-SHA256\n" + hex.EncodeToString(hashed[:])))
	if !hmac.Equal([]byte(hex.EncodeToString(mac.Sum(nil))), []byte(fields["Signature"])) {
		return http.StatusForbidden, "SignatureDoesNotMatch", "Specified signature does not match our calculation."
	}
	nonce := r.Header.Get("x-acs-signature-nonce")
	s.mu.Lock()
	used := s.nonces[nonce]
	s.nonces[nonce] = true
	s.mu.Unlock()
	if used {
		return http.StatusBadRequest, "SignatureNonceUsed", "Specified signature nonce was used already."
	}
	return 0, "", ""
}

// canonicalQuery is the query sorted by name, names and values
// percent-encoded (RFC 3986: space is %20, '~' kept).
func canonicalQuery(r *http.Request) string {
	q := r.URL.Query()
	keys := make([]string, 0, len(q))
	for k := range q {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		vs := q[k]
		sort.Strings(vs)
		for _, v := range vs {
			parts = append(parts, enc(k)+"="+enc(v))
		}
	}
	return strings.Join(parts, "&")
}

func enc(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.' || c == '~' {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

type createJob struct {
	DisplayName string `json:"DisplayName"`
	JobType     string `json:"JobType"`
	JobSpecs    []struct {
		Type     string `json:"Type"`
		Image    string `json:"Image"`
		PodCount int    `json:"PodCount"`
		EcsSpec  string `json:"EcsSpec"`
	} `json:"JobSpecs"`
	UserCommand string `json:"UserCommand"`
	DataSources []struct {
		DataSourceID string `json:"DataSourceId"`
		MountPath    string `json:"MountPath,omitempty"`
	} `json:"DataSources"`
	Envs        map[string]string `json:"Envs"`
	WorkspaceID string            `json:"WorkspaceId"`
	Settings    *struct {
		Tags map[string]string `json:"Tags,omitempty"`
	} `json:"Settings,omitempty"`
}

var displayNameRE = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,256}$`)

var jobTypes = map[string]bool{"TFJob": true, "PyTorchJob": true, "MPIJob": true, "XGBoostJob": true, "OneFlowJob": true, "ElasticBatchJob": true}

func (s *Server) create(w http.ResponseWriter, body []byte) {
	var req createJob
	if err := json.Unmarshal(body, &req); err != nil {
		apiError(w, http.StatusBadRequest, "InvalidParameter", "The body is not JSON: "+err.Error())
		return
	}
	switch {
	case !displayNameRE.MatchString(req.DisplayName):
		apiError(w, http.StatusBadRequest, "InvalidParameter.DisplayName", "DisplayName must be 1 to 256 letters, digits, '_', '.' or '-'.")
		return
	case !jobTypes[req.JobType]:
		apiError(w, http.StatusBadRequest, "InvalidParameter.JobType", "JobType "+req.JobType+" is not supported.")
		return
	case len(req.JobSpecs) == 0 || req.UserCommand == "":
		apiError(w, http.StatusBadRequest, "MissingParameter", "JobSpecs and UserCommand are required.")
		return
	}
	for _, sp := range req.JobSpecs {
		if sp.Type == "" || sp.Image == "" || sp.PodCount < 1 || sp.EcsSpec == "" {
			apiError(w, http.StatusBadRequest, "InvalidParameter.JobSpecs", "each JobSpec needs Type, Image, PodCount >= 1 and EcsSpec.")
			return
		}
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	id := "dlc" + hex.EncodeToString(b[:])
	s.mu.Lock()
	s.jobs[id] = &job{id: id, req: req, created: time.Now().UTC()}
	s.order = append(s.order, id)
	s.creates++
	s.mu.Unlock()
	// One pod runs the command (the first worker): enough for the trial
	// protocol, which reads the first pod's log.
	if err := s.Runner.Start(id, req.UserCommand, req.Envs, "/"); err != nil {
		apiError(w, http.StatusInternalServerError, "InternalError", err.Error())
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"JobId": id})
}

// dlcStates are DLC's job statuses.
var dlcStates = cloudtest.StateNames{Unknown: "Failed", Waiting: "Queuing", Running: "Running",
	Stopping: "Stopping", Succeeded: "Succeeded", Failed: "Failed", Stopped: "Stopped"}

func (s *Server) status(j *job) (string, cloudtest.Status) {
	st, ok := s.Runner.Status(j.id)
	s.mu.Lock()
	stopped := j.stopped
	s.mu.Unlock()
	return dlcStates.Name(st, ok, stopped), st
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	// DLC writes seconds; the fake adds milliseconds so that tests of
	// sub-second durations (max_duration) can measure them.
	return t.UTC().Format("2006-01-02T15:04:05.000Z07:00")
}

func podID(id string) string { return id + "-worker-0" }

// info is GetJob's answer (full) or one of ListJobs' items.
func (s *Server) info(j *job, full bool) map[string]any {
	state, st := s.status(j)
	m := map[string]any{"JobId": j.id, "DisplayName": j.req.DisplayName, "JobType": j.req.JobType, "Status": state,
		"WorkspaceId": j.req.WorkspaceID, "UserCommand": j.req.UserCommand, "JobSpecs": j.req.JobSpecs,
		"GmtCreateTime": stamp(j.created), "GmtRunningTime": stamp(st.Started), "Settings": j.req.Settings}
	if st.Done() {
		m["GmtFinishTime"] = stamp(st.Ended)
		if state == "Failed" {
			m["ReasonCode"] = "JobFailed"
			m["ReasonMessage"] = "The user command exited with exit code " + strconv.Itoa(st.ExitCode) + "."
		}
	}
	if full {
		m["DataSources"] = j.req.DataSources
		m["Envs"] = j.req.Envs
		pod := "Pending"
		switch state {
		case "Running", "Stopping":
			pod = "Running"
		case "Succeeded", "Failed", "Stopped":
			pod = state
		}
		m["Pods"] = []map[string]any{{"PodId": podID(j.id), "Type": "Worker", "Status": pod, "GmtCreateTime": stamp(j.created)}}
	}
	return m
}

func (s *Server) list(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	size, _ := strconv.Atoi(q.Get("PageSize"))
	page, _ := strconv.Atoi(q.Get("PageNumber"))
	if size <= 0 {
		size = 50
	}
	if size > 100 {
		apiError(w, http.StatusBadRequest, "InvalidParameter.PageSize", "PageSize must be at most 100.")
		return
	}
	if page <= 0 {
		page = 1
	}
	s.mu.Lock()
	var js []*job
	for i := len(s.order) - 1; i >= 0; i-- { // newest first
		j := s.jobs[s.order[i]]
		if j == nil || (q.Get("DisplayName") != "" && !strings.Contains(j.req.DisplayName, q.Get("DisplayName"))) ||
			(q.Get("WorkspaceId") != "" && j.req.WorkspaceID != q.Get("WorkspaceId")) {
			continue
		}
		js = append(js, j)
	}
	s.mu.Unlock()
	total := len(js)
	lo := min((page-1)*size, total)
	hi := min(lo+size, total)
	items := []map[string]any{}
	for _, j := range js[lo:hi] {
		it := s.info(j, false)
		if s.ListWithoutSettings {
			delete(it, "Settings")
		}
		items = append(items, it)
	}
	writeJSON(w, http.StatusOK, map[string]any{"Jobs": items, "TotalCount": total})
}

// logs answers the pod's log as lines: only complete lines while the pod
// runs (a log collector ships whole lines), the last partial one too once
// it ended. MaxLines keeps the first lines.
func (s *Server) logs(w http.ResponseWriter, r *http.Request, j *job, pod string) {
	if pod != podID(j.id) {
		apiError(w, http.StatusNotFound, "PodNotFound", "Pod "+pod+" is not found.")
		return
	}
	out, _ := s.Runner.Log(j.id, 0)
	st, _ := s.Runner.Status(j.id)
	text := string(out)
	if !st.Done() {
		if i := strings.LastIndexByte(text, '\n'); i >= 0 {
			text = text[:i+1]
		} else {
			text = ""
		}
	}
	lines := []string{}
	if text != "" {
		lines = strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	}
	if n, err := strconv.Atoi(r.URL.Query().Get("MaxLines")); err == nil && n > 0 && n < len(lines) {
		lines = lines[:n]
	}
	writeJSON(w, http.StatusOK, map[string]any{"JobId": j.id, "PodId": pod, "Logs": lines})
}
