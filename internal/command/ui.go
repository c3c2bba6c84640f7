package command

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/trialform/trialform/apply"
	"github.com/trialform/trialform/internal/ui"
	"github.com/trialform/trialform/internal/views"
	"github.com/trialform/trialform/plan"
	"github.com/trialform/trialform/providers"
	"github.com/trialform/trialform/schema"
	"github.com/trialform/trialform/state"
)

// defaultUIAddr is the only address served without a token.
const defaultUIAddr = "127.0.0.1:8080"

func runUI(ctx context.Context, g *Globals, args []string) int {
	fs := flag.NewFlagSet("ui", flag.ContinueOnError)
	addr := fs.String("addr", defaultUIAddr, "address to listen on; any host but 127.0.0.1 needs a token")
	token := fs.String("token", "", "token every request must carry (?token=, a cookie, or Authorization: Bearer); else $"+envDashToken+" (which ps does not show other users); with a non-default -addr and neither, a random one is made and printed")
	open := fs.Bool("open", false, "open the dashboard in the default browser (xdg-open)")
	if _, code, ok := g.parse(fs, args, argSpec{hint: "ui takes no arguments: trialform ui [-addr HOST:PORT] [-token T] [-open]"}); !ok {
		return code
	}
	host, _, err := net.SplitHostPort(*addr)
	if err != nil {
		return g.errorf("-addr %q: %v (write HOST:PORT, e.g. 127.0.0.1:8080)", *addr, err)
	}
	if *token == "" {
		*token = g.getenv(envDashToken)
	}
	if host != "127.0.0.1" && *token == "" {
		b := make([]byte, 16)
		rand.Read(b)
		*token = hex.EncodeToString(b)
		views.UITokenMade(g.IO.Err, *addr)
	}
	wd, err := g.workDir()
	if err != nil {
		return g.errorf("%v", err)
	}
	sd, backend, ok := g.openBackend(nil)
	if !ok {
		return 1
	}
	g.backendNote()
	g.uiProviders = &sharedProviders{}
	defer g.uiProviders.close()
	srv := ui.New(ui.Options{
		StateDir: sd, WorkDir: wd, Token: *token, SameUser: *token == "", Backend: backend,
		Config: g.loadConfigQuiet,
		Plan:   func(ctx context.Context) (string, error) { return g.uiPlan(ctx, sd) },
		Logs: func(ctx context.Context, e *state.Experiment, t *state.Trial, follow bool, w io.Writer) error {
			return g.uiLogs(ctx, sd, e, t, follow, w)
		},
	})
	defer srv.Close()
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return g.errorf("listen on %s: %v (choose another port with -addr)", *addr, err)
	}
	url := "http://" + reachableAddr(ln.Addr()) + "/"
	if *token != "" {
		url += "?token=" + *token
	}
	views.UIServing(g.IO.Out, g.IO.Err, url, wd)
	if *open {
		if err := exec.Command("xdg-open", url).Start(); err != nil {
			views.UINoBrowser(g.IO.Err, err)
		}
	}
	hs := ui.HTTPServer(srv, ui.Limits{})
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case <-ctx.Done():
		srv.Close()
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		hs.Shutdown(sctx)
		return 0
	case err := <-errc:
		if errors.Is(err, http.ErrServerClosed) {
			return 0
		}
		return g.errorf("serve: %v", err)
	}
}

// uiPlan computes what apply would do next, like `plan`, without a lock
// and without printing: plan's human text.
func (g *Globals) uiPlan(ctx context.Context, sd string) (string, error) {
	cfg := g.loadConfigQuiet()
	if cfg == nil {
		return "", errors.New("the configuration does not load: run `trialform validate` to see why")
	}
	_, m, ok := g.openBackend(nil) // opened by runUI: returns it
	if !ok {
		return "", errors.New("the state backend cannot be opened")
	}
	st, err := state.Peek(m)
	if err != nil {
		return "", err
	}
	ps, release := g.uiProviders.get(cfg, sd)
	defer release()
	s := apply.NewSession(cfg, st, newMemStore(m), ps)
	s.PlanOnly = true // a memory store: what it refreshes is not kept
	p, err := s.Plan(ctx, plan.Options{})
	if err != nil {
		return "", fmt.Errorf("plan: %w", err)
	}
	var b bytes.Buffer
	views.Plan(&b, p, views.Colors{})
	return b.String(), nil
}

func (g *Globals) uiLogs(ctx context.Context, sd string, e *state.Experiment, t *state.Trial, follow bool, w io.Writer) error {
	var cfg *schema.Config
	if c := g.loadConfigQuiet(); c != nil {
		cfg = c
	}
	ps, release := g.uiProviders.get(cfg, sd)
	defer release()
	p, err := ps.Provider(e.Platform)
	if err != nil {
		return err
	}
	ls, ok := p.(providers.LogStreamer)
	if !ok {
		return fmt.Errorf("platform %s cannot show logs", e.Platform)
	}
	mw := logMask(e, cfg).Writer(w)
	err = ls.Logs(ctx, providers.LogsRequest{Experiment: e.OnPlatform(), TrialID: t.ID, Handle: providers.Handle(t.Handle), Follow: follow, Out: mw})
	if cerr := mw.Close(); err == nil {
		err = cerr
	}
	return err
}

// sharedProviders is the dashboard's provider set, shared by its log
// streams and plans: a remote machine gets one SSH connection however many
// streams are open (each stream building its own set made one login per
// stream). It is rebuilt when the platform blocks change; the old set is
// closed once its last user is done.
type sharedProviders struct {
	mu  sync.Mutex
	key string
	cur *sharedSet
}

type sharedSet struct {
	ps    *providerSet
	users int
	stale bool
}

func (s *sharedProviders) get(cfg *schema.Config, sd string) (*providerSet, func()) {
	var key strings.Builder
	if cfg != nil {
		for _, k := range sortedKeys(cfg.Platforms) {
			fmt.Fprintf(&key, "%s=%v;", k, cfg.Platforms[k].Attrs)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cur == nil || s.key != key.String() {
		s.retire()
		s.cur, s.key = &sharedSet{ps: newProviderSet(cfg, sd)}, key.String()
	} else {
		s.cur.ps.mu.Lock()
		s.cur.ps.cfg = cfg
		s.cur.ps.mu.Unlock()
	}
	r := s.cur
	r.users++
	return r.ps, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		r.users--
		if r.stale && r.users == 0 {
			r.ps.Close()
		}
	}
}

// retire closes the current set, or leaves it to its last user; s.mu is
// held.
func (s *sharedProviders) retire() {
	if s.cur == nil {
		return
	}
	s.cur.stale = true
	if s.cur.users == 0 {
		s.cur.ps.Close()
	}
	s.cur = nil
}

func (s *sharedProviders) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.retire()
}

// reachableAddr is the host:port to print for a listener: a listener on
// every interface (0.0.0.0, ::) is reached by this machine's name, not by
// the unspecified address ("http://[::]:8080" opens nowhere else).
func reachableAddr(a net.Addr) string {
	ta, ok := a.(*net.TCPAddr)
	if !ok || !ta.IP.IsUnspecified() {
		return a.String()
	}
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, strconv.Itoa(ta.Port))
}
