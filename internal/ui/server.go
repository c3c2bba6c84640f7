// Package ui serves trialform's read-only web dashboard: the embedded
// single-page app (assets/, built from web/ by `make ui-assets`) and a JSON
// API over the state and metrics files, read without taking the state lock
// so it runs beside `apply -wait` or `watch`. Pages follow changes through
// server-sent events (/api/events).
//
// It never writes: only GET and HEAD are served, and no handler touches a
// file other than to read it. Experiments and trials are looked up by name
// in the state, never joined into paths unchecked, so an unknown or
// hostile id (../../etc) is a 404. What it cannot do itself (a plan, a
// trial's logs) it asks the command layer through the Options functions.
package ui

import (
	"context"
	"crypto/subtle"
	"embed"
	"encoding/json"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/trialform/trialform/schema"
	"github.com/trialform/trialform/state"
)

//go:embed assets
var assets embed.FS

// Options configure a Server.
type Options struct {
	// StateDir is the .trialform directory; WorkDir the directory of the
	// HCL files (for the config, the plan and the git history).
	StateDir, WorkDir string
	// Backend is where the state is read from (default: state.Open of
	// StateDir, the local backend). The dashboard reads the state, its
	// metric series and refresh marks only through it.
	Backend state.Backend
	// Token, when set, must come with every request: as ?token=, which
	// also sets a cookie, as that cookie, or as "Authorization: Bearer".
	Token string
	// SameUser, without a Token, serves only connections made by
	// processes of the user the server runs as (see peer.go); the server
	// must be HTTPServer's.
	SameUser bool
	// Config loads the configuration (nil when it does not load).
	Config func() *schema.Config
	// Plan renders what `apply` would do next, as plan's human text.
	Plan func(ctx context.Context) (string, error)
	// Controller, set by `trialform controller`, reports its sync status
	// for the overview (nil: not a controller's dashboard).
	Controller func() ControllerJSON
	// Logs writes a trial's output to w (following it while it runs when
	// follow is set) until it ends or ctx is done.
	Logs func(ctx context.Context, e *state.Experiment, t *state.Trial, follow bool, w io.Writer) error
	// Query filters and sorts the trials table (default: Query, the
	// trials command's language).
	Query Querier
	// Poll is how often the state file is checked for a change (default
	// 200ms).
	Poll time.Duration
	// TrialDirs returns the directories of a trial where its TensorBoard
	// event files may lie (default: STATEDIR/tensorboard/EXP/TRIAL and, on
	// the local platform, the trial's directory).
	TrialDirs func(e *state.Experiment, t *state.Trial) []string
}

// Server is the dashboard's HTTP handler.
type Server struct {
	o     Options
	uid   int // the user SameUser serves
	mux   *http.ServeMux
	data  *store
	watch *watcher

	warmMu    sync.Mutex
	warmTimer *time.Timer
	closed    bool // guarded by warmMu
}

// warmDelay is how long the state must stay unchanged before the server
// prepares what a newly opened page asks for (warm): while trials keep
// changing, open pages are patched by events and need none of it, and
// the CPU is theirs.
const warmDelay = time.Second

// New returns the server of o. Close stops its state watcher.
func New(o Options) *Server {
	if o.Poll <= 0 {
		o.Poll = 200 * time.Millisecond
	}
	if o.Config == nil {
		o.Config = func() *schema.Config { return nil }
	}
	if o.Query == nil {
		o.Query = Query{}
	}
	s := &Server{o: o, uid: os.Getuid(), mux: http.NewServeMux()}
	s.data = newStore(o)
	s.watch = newWatcher(s.data, o.Poll, s.changed)
	go s.warm(s.data.current()) // read a large state before the first page asks
	s.routes()
	return s
}

// Close stops the watcher; open event streams end.
func (s *Server) Close() {
	s.watch.stop()
	s.warmMu.Lock()
	s.closed = true
	if s.warmTimer != nil {
		s.warmTimer.Stop()
	}
	s.warmMu.Unlock()
}

// changed is told of each new version of the state: it warms the newest
// once the state has stayed unchanged for warmDelay.
func (s *Server) changed(*snapshot) {
	s.warmMu.Lock()
	defer s.warmMu.Unlock()
	if s.warmTimer != nil {
		s.warmTimer.Stop()
	}
	if s.closed {
		return
	}
	s.warmTimer = time.AfterFunc(warmDelay, func() {
		s.warmMu.Lock()
		closed := s.closed
		s.warmMu.Unlock()
		if !closed {
			s.warm(s.data.current())
		}
	})
}

func (s *Server) routes() {
	sub, _ := fs.Sub(assets, "assets")
	static := http.FileServerFS(sub)
	s.mux.Handle("GET /assets/", http.StripPrefix("/assets/", noDirs(static)))
	s.mux.HandleFunc("GET /{$}", s.index)
	for _, p := range []string{"GET /e/", "GET /compare", "GET /plan", "GET /history"} {
		s.mux.HandleFunc(p, s.index) // client-side routes
	}
	s.mux.HandleFunc("GET /api/overview", s.apiOverview)
	s.mux.HandleFunc("GET /api/events", s.apiEvents)
	s.mux.HandleFunc("GET /api/plan", s.apiPlan)
	s.mux.HandleFunc("GET /api/history", s.apiHistory)
	s.mux.HandleFunc("GET /api/compare", s.apiCompare)
	s.mux.HandleFunc("GET /api/experiments/{exp}", s.apiExperiment)
	s.mux.HandleFunc("GET /api/experiments/{exp}/trials", s.apiTrials)
	s.mux.HandleFunc("GET /api/experiments/{exp}/curves", s.apiCurves)
	s.mux.HandleFunc("GET /api/experiments/{exp}/importance", s.apiImportance)
	s.mux.HandleFunc("GET /api/experiments/{exp}/trials/{id}", s.apiTrial)
	s.mux.HandleFunc("GET /api/experiments/{exp}/trials/{id}/logs", s.apiLogs)
	s.mux.HandleFunc("GET /api/experiments/{exp}/trials/{id}/scalars", s.apiScalars)
}

// noDirs makes directory paths 404 instead of listing them.
func noDirs(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "" || strings.HasSuffix(r.URL.Path, "/") {
			http.NotFound(w, r)
			return
		}
		h.ServeHTTP(w, r)
	})
}

func (s *Server) index(w http.ResponseWriter, r *http.Request) {
	b, err := assets.ReadFile("assets/index.html")
	if err != nil {
		http.Error(w, "the dashboard's assets are missing from this build (run make ui-assets)", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Write(b)
}

// ServeHTTP checks the method, the Host and the token, sets the security
// headers, and dispatches.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; font-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		h.Set("Allow", "GET, HEAD")
		h.Set("Connection", "close")
		http.Error(w, "the dashboard is read-only", http.StatusMethodNotAllowed)
		return
	}
	if crossSite(r) {
		// A page of another site the user visits (another port of
		// localhost included) must not make the browser call the API:
		// it would read nothing (same-origin policy) but start platform
		// refreshes, SSH logins and log reads with this user's rights.
		h.Set("Connection", "close")
		http.Error(w, "cross-site request refused: open the dashboard's own URL", http.StatusForbidden)
		return
	}
	if s.o.Token == "" {
		// No token (loopback only): refuse other Host names, so a page
		// elsewhere cannot read the API through DNS rebinding.
		if !loopbackHost(r.Host) {
			h.Set("Connection", "close")
			http.Error(w, "forbidden host", http.StatusForbidden)
			return
		}
		if s.o.SameUser {
			// Nor another user of this machine: the output its trials
			// keep in 0600 files is theirs.
			if err := s.checkUser(r); err != nil {
				h.Set("Connection", "close")
				http.Error(w, err.Error()+"; to share the dashboard, start it with -token", http.StatusForbidden)
				return
			}
		}
	} else if !s.authorized(w, r) {
		// A refused client keeps no connection: thousands of them must
		// not hold the file descriptors the token's holder needs.
		h.Set("Connection", "close")
		http.Error(w, "a token is required: open the URL trialform ui printed (…?token=…)", http.StatusUnauthorized)
		return
	}
	s.mux.ServeHTTP(w, r)
}

// crossSite reports a request a browser made for a page of another origin
// (Fetch Metadata, sent by every current browser): anything but a
// top-level navigation (following a link to the dashboard is fine) from
// other than this origin or the user (a typed URL, a bookmark). Clients
// that send no Sec-Fetch-Site (curl, scripts) are not browsers' pages.
func crossSite(r *http.Request) bool {
	switch r.Header.Get("Sec-Fetch-Site") {
	case "", "same-origin", "none":
		return false
	}
	return r.Header.Get("Sec-Fetch-Mode") != "navigate"
}

const tokenCookie = "trialform_token"

func (s *Server) authorized(w http.ResponseWriter, r *http.Request) bool {
	eq := func(v string) bool { return v != "" && subtle.ConstantTimeCompare([]byte(v), []byte(s.o.Token)) == 1 }
	if q := r.URL.Query().Get("token"); q != "" {
		if !eq(q) {
			return false
		}
		http.SetCookie(w, &http.Cookie{Name: tokenCookie, Value: s.o.Token, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
		return true
	}
	if c, err := r.Cookie(tokenCookie); err == nil && eq(c.Value) {
		return true
	}
	if a, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok && eq(a) {
		return true
	}
	return false
}

func loopbackHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}

// writeJSON writes v with status 200.
func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(true)
	enc.Encode(v)
}

func jsonError(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}
