package command

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/trialform/trialform/schema"
	"github.com/trialform/trialform/state"
)

// The push webhook (POST /hook) and the check of a changed backend block.

// The webhook reads a body only for a GitHub-style signature (an HMAC of
// the body) and the push's "ref"; a header token (Bearer, GitLab) is
// checked before any of the body is read, and a wrong or missing one is
// refused unread. A body is read whole into memory, so its size and the
// number read at once are bounded: maxHookBody (a push event is a few
// KB; GitHub's own cap, 25 MB, would let 20 unauthenticated requests
// hold half a GB) and maxHookReads (others are answered 503 at once).
// A push refused for its size is still picked up by the next poll.
const (
	maxHookBody  = 1 << 20
	maxHookReads = 4
)

// hookReads holds a slot per webhook body being read.
var hookReads = make(chan struct{}, maxHookReads)

// serveHook starts a pass at once (fetch, plan, apply) on a push to the
// branch followed, instead of at the next -interval. It needs the webhook
// secret, given as a forge sends it: `Authorization: Bearer SECRET`
// (curl, any CI), `X-Gitlab-Token: SECRET` (GitLab), or
// `X-Hub-Signature-256: sha256=HMAC-SHA256(SECRET, body)` (GitHub, Gitea,
// Forgejo). A push to another branch (the body's "ref") is answered and
// ignored; a body without "ref" (a ping, or none) syncs.
func (c *ctrl) serveHook(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "POST a push event", http.StatusMethodNotAllowed)
		return
	}
	if c.hookToken == "" {
		c.metrics.Webhooks.WithLabelValues("off").Inc()
		http.Error(w, "the webhook is off: start the controller with -webhook-token-file or $"+envHookToken, http.StatusForbidden)
		return
	}
	unauthorized := func() {
		c.metrics.Webhooks.WithLabelValues("unauthorized").Inc()
		http.Error(w, "wrong or missing webhook secret (send Authorization: Bearer SECRET, X-Gitlab-Token: SECRET or X-Hub-Signature-256: sha256=HMAC)", http.StatusUnauthorized)
	}
	// A header token, or no secret at all, is judged before the body is read.
	if ok, needsBody := hookHeaderAuthorized(c.hookToken, r.Header); !ok && !needsBody {
		unauthorized()
		return
	}
	if r.ContentLength > maxHookBody {
		hookTooLarge(w)
		return
	}
	select {
	case hookReads <- struct{}{}:
		defer func() { <-hookReads }()
	default:
		w.Header().Set("Retry-After", "1")
		http.Error(w, "too many webhook requests at once; retry", http.StatusServiceUnavailable)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxHookBody+1))
	if err != nil {
		http.Error(w, "read the body: "+err.Error(), http.StatusBadRequest)
		return
	}
	if len(body) > maxHookBody {
		hookTooLarge(w)
		return
	}
	if !hookAuthorized(c.hookToken, r.Header, body) {
		unauthorized()
		return
	}
	var push struct {
		Ref string `json:"ref"`
	}
	json.Unmarshal(body, &push) // a ping or an empty body has no ref: sync
	if want := "refs/heads/" + c.o.branch; push.Ref != "" && push.Ref != want {
		c.metrics.Webhooks.WithLabelValues("ignored").Inc()
		fmt.Fprintf(w, "ignored: a push to %s; the controller follows %s\n", push.Ref, want)
		return
	}
	c.metrics.Webhooks.WithLabelValues("sync").Inc()
	c.log.Info("webhook: syncing now", "ref", push.Ref)
	select {
	case c.wake <- struct{}{}:
	default: // a pass is already due
	}
	w.WriteHeader(http.StatusAccepted)
	w.Write([]byte("syncing\n"))
}

func hookTooLarge(w http.ResponseWriter) {
	http.Error(w, fmt.Sprintf("the body is over %d bytes: a push event is a few KB (the commit is picked up at the next poll)", maxHookBody), http.StatusRequestEntityTooLarge)
}

// hookHeaderAuthorized judges the secret of h without the body: ok when a
// header token is right; needsBody when only the body's signature can
// tell (X-Hub-Signature-256 and no token).
func hookHeaderAuthorized(secret string, h http.Header) (ok, needsBody bool) {
	if tok, found := strings.CutPrefix(h.Get("Authorization"), "Bearer "); found {
		return subtle.ConstantTimeCompare([]byte(tok), []byte(secret)) == 1, false
	}
	if tok := h.Get("X-Gitlab-Token"); tok != "" {
		return subtle.ConstantTimeCompare([]byte(tok), []byte(secret)) == 1, false
	}
	_, sig := strings.CutPrefix(h.Get("X-Hub-Signature-256"), "sha256=")
	return false, sig
}

// hookAuthorized checks the webhook secret in whichever form h carries.
func hookAuthorized(secret string, h http.Header, body []byte) bool {
	if tok, ok := strings.CutPrefix(h.Get("Authorization"), "Bearer "); ok {
		return subtle.ConstantTimeCompare([]byte(tok), []byte(secret)) == 1
	}
	if tok := h.Get("X-Gitlab-Token"); tok != "" {
		return subtle.ConstantTimeCompare([]byte(tok), []byte(secret)) == 1
	}
	if sig, ok := strings.CutPrefix(h.Get("X-Hub-Signature-256"), "sha256="); ok {
		mac := hmac.New(sha256.New, []byte(secret))
		mac.Write(body)
		return hmac.Equal([]byte(strings.ToLower(sig)), []byte(hex.EncodeToString(mac.Sum(nil))))
	}
	return false
}

// backendChanged reports whether cfg, the good definitions of commit,
// name another backend than the one open. The backend is opened once (a
// shared state must never be swapped for an empty one under running
// trials), so such a commit is not put in force: the last good
// definitions stay, and the log, /metrics (trialform_backend_changed),
// /readyz and the dashboard's last failed sync (stage "backend") say
// what changed and what to do.
func (c *ctrl) backendChanged(commit string, cfg *schema.Config) bool {
	want := backendRecordOf(cfg.Backend)
	if c.m == nil || c.mRec.Same(want) {
		c.mu.Lock()
		was := c.backendMsg
		c.backendMsg = ""
		c.mu.Unlock()
		c.metrics.BackendChanged.Set(0)
		c.syncOK("backend")
		if was != "" {
			c.log.Info("the backend block is the one in use again", "commit", commit, "backend", c.mRec.Kind)
		}
		return false
	}
	msg := fmt.Sprintf("the backend block changed in commit %s (%s): the controller keeps using the %s backend it opened and the definitions of commit %s; to move, copy the state into the new backend (`trialform init -migrate-state` in a working copy of commit %s that holds the state), then restart the controller with an empty -work-dir",
		short(commit), describeBackendChange(c.mRec, want), c.mRec.Kind, short(c.goodCommit), short(commit))
	c.badCommit = commit
	c.metrics.DefinitionsOK.Set(0)
	c.metrics.BackendChanged.Set(1)
	c.metrics.SyncErrors.WithLabelValues("backend").Inc()
	c.mu.Lock()
	c.backendMsg = msg
	c.mu.Unlock()
	c.syncOK("definitions") // they load; the backend is what fails
	c.syncFailed("backend", commit, c.redact(msg))
	c.log.Error("backend block changed; restart needed", "commit", commit, "in_use", c.mRec.Kind, "new", want.Kind, "in_force", c.goodCommit, "error", c.redact(msg))
	return true
}

func describeBackendChange(have, want state.BackendRecord) string {
	if have.Kind != want.Kind {
		return fmt.Sprintf("from %s to %s", have.Kind, want.Kind)
	}
	return fmt.Sprintf("settings of %s: %s", want.Kind, strings.Join(have.ChangedSettings(want), ", "))
}

func short(commit string) string {
	if len(commit) > 12 {
		return commit[:12]
	}
	return commit
}
