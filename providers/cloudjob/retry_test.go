package cloudjob

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/trialform/trialform/providers"
)

func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		err   error
		retry bool
		after time.Duration
	}{
		{&HTTPError{Status: 429, RetryAfter: 3 * time.Second}, true, 3 * time.Second},
		{&HTTPError{Status: 503}, true, 0},
		{&HTTPError{Status: 400}, false, 0},
		{providers.Permanent(&HTTPError{Status: 500}), false, 0},
		{AuthError("op", 401, "x"), false, 0},
		{providers.ErrNotFound, false, 0},
		{ErrUnsupported, false, 0},
		{io.ErrUnexpectedEOF, true, 0},
		{context.DeadlineExceeded, true, 0},
		{Retryable(errors.New("busy")), true, 0},
		{errors.New("something else"), false, 0},
	} {
		retry, after := Classify(tc.err)
		if retry != tc.retry || after != tc.after {
			t.Errorf("Classify(%v) = %v %s, want %v %s", tc.err, retry, after, tc.retry, tc.after)
		}
	}
}

func TestRetryBoundsAndRetryAfter(t *testing.T) {
	var waits []time.Duration
	r := Retry{Attempts: 4, Base: 100 * time.Millisecond, Max: 5 * time.Second, MaxElapsed: time.Hour,
		Sleep: func(ctx context.Context, d time.Duration) error { waits = append(waits, d); return nil }}
	calls := 0
	err := r.Do(context.Background(), Classify, func(context.Context) error {
		calls++
		if calls == 1 {
			return &HTTPError{Status: 429, RetryAfter: 2 * time.Second}
		}
		return &HTTPError{Status: 500}
	})
	var he *HTTPError
	if calls != 4 || !errors.As(err, &he) || he.Status != 500 {
		t.Fatalf("%d calls, %v; want 4 calls and the last error", calls, err)
	}
	if len(waits) != 3 || waits[0] != 2*time.Second {
		t.Errorf("waits %v: want Retry-After's 2s first, then backoff", waits)
	}
	for i, w := range waits[1:] {
		base := 100 * time.Millisecond << (i + 1)
		if w < base/2 || w > base {
			t.Errorf("backoff %d = %s, want within [%s, %s]", i+1, w, base/2, base)
		}
	}
	// A permanent error is not retried.
	calls = 0
	_ = r.Do(context.Background(), Classify, func(context.Context) error { calls++; return AuthError("op", 403, "y") })
	if calls != 1 {
		t.Errorf("a 403 was called %d times", calls)
	}
	// A Retry-After past MaxElapsed gives up at once.
	r.MaxElapsed = time.Second
	calls = 0
	_ = r.Do(context.Background(), Classify, func(context.Context) error { calls++; return &HTTPError{Status: 429, RetryAfter: 3 * time.Second} })
	if calls != 1 {
		t.Errorf("called %d times past MaxElapsed", calls)
	}
}

func TestCheckResponse(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		code := map[string]int{"/401": 401, "/404": 404, "/429": 429, "/400": 400, "/200": 200}[r.URL.Path]
		if code == 429 {
			w.Header().Set("Retry-After", "7")
		}
		w.WriteHeader(code)
		_, _ = w.Write([]byte("body"))
	}))
	defer srv.Close()
	get := func(p string) error {
		resp, err := http.Get(srv.URL + p)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		return CheckResponse("get "+p, resp, "the token attribute")
	}
	if err := get("/200"); err != nil {
		t.Error(err)
	}
	if err := get("/401"); !providers.IsPermanent(err) || !strings.Contains(err.Error(), "the token attribute") || !strings.Contains(err.Error(), "HTTP 401") {
		t.Errorf("401: %v", err)
	}
	if err := get("/404"); !errors.Is(err, providers.ErrNotFound) {
		t.Errorf("404: %v", err)
	}
	if retry, after := Classify(get("/429")); !retry || after != 7*time.Second {
		t.Errorf("429: retry %v after %s", retry, after)
	}
	if err := get("/400"); !providers.IsPermanent(err) {
		t.Errorf("400: %v", err)
	}
}

func TestRetryAfterDate(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if d := RetryAfter(now.Add(90*time.Second).Format(http.TimeFormat), now); d != 90*time.Second {
		t.Errorf("date Retry-After = %s", d)
	}
	if d := RetryAfter("soon", now); d != 0 {
		t.Errorf("bad Retry-After = %s", d)
	}
}

// Secrets never reach an error's text, and the error keeps its class.
func TestScrub(t *testing.T) {
	p := New(nil, Options{Secrets: []string{"hunter2"}}).(*Provider)
	err := p.scrub(providers.Permanent(errors.New(`get "http://x/?password=hunter2": refused`)))
	if strings.Contains(err.Error(), "hunter2") || !providers.IsPermanent(err) {
		t.Errorf("scrubbed: %v (permanent %v)", err, providers.IsPermanent(err))
	}
}
