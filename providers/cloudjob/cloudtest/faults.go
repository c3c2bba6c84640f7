package cloudtest

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"time"
)

// Fault is one way a service misbehaves for one request.
type Fault int

const (
	// Throttle answers 429 with a Retry-After header, not handling the request.
	Throttle Fault = iota
	// ServerError answers 500, not handling the request.
	ServerError
	// Drop closes the connection before handling the request.
	Drop
	// DropAfter handles the request, then closes the connection without
	// answering: the client cannot tell whether it happened.
	DropAfter
	// Slow handles the request and answers only after Faults.SlowFor: a
	// client with a shorter timeout gives up on a request that happened.
	Slow
)

func (f Fault) String() string {
	return [...]string{"throttle", "server error", "drop", "drop after", "slow"}[f]
}

// Faults wraps a fake service's handler and injects queued faults into the
// next matching requests.
type Faults struct {
	// RetryAfter is the Retry-After header of Throttle, in whole seconds
	// (0: "0", retry at once).
	RetryAfter int
	// SlowFor is how long Slow holds the answer (0: 2s).
	SlowFor time.Duration

	mu    sync.Mutex
	queue []queued
	hits  map[Fault]int
}

type queued struct {
	f     Fault
	match func(*http.Request) bool
}

// Inject queues fault for the next n requests that match (nil: any).
func (fs *Faults) Inject(f Fault, n int, match func(*http.Request) bool) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	for i := 0; i < n; i++ {
		fs.queue = append(fs.queue, queued{f, match})
	}
}

// Method returns a matcher of requests with that method (and a path
// containing sub, when sub is not "").
func Method(method, sub string) func(*http.Request) bool {
	return func(r *http.Request) bool {
		return r.Method == method && (sub == "" || contains(r.URL.Path, sub))
	}
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}

// Hits returns how many times fault f was injected.
func (fs *Faults) Hits(f Fault) int {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return fs.hits[f]
}

// Pending returns how many queued faults were not injected yet.
func (fs *Faults) Pending() int {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return len(fs.queue)
}

func (fs *Faults) take(r *http.Request) (Fault, bool) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	for i, q := range fs.queue {
		if q.match == nil || q.match(r) {
			fs.queue = append(fs.queue[:i:i], fs.queue[i+1:]...)
			if fs.hits == nil {
				fs.hits = map[Fault]int{}
			}
			fs.hits[q.f]++
			return q.f, true
		}
	}
	return 0, false
}

// Wrap returns h with the faults injected.
func (fs *Faults) Wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f, ok := fs.take(r)
		if !ok {
			h.ServeHTTP(w, r)
			return
		}
		switch f {
		case Throttle:
			w.Header().Set("Retry-After", strconv.Itoa(fs.RetryAfter))
			http.Error(w, "too many requests", http.StatusTooManyRequests)
		case ServerError:
			http.Error(w, "internal error", http.StatusInternalServerError)
		case Drop:
			hangUp(w)
		case DropAfter:
			h.ServeHTTP(httptest.NewRecorder(), r)
			hangUp(w)
		case Slow:
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, r)
			d := fs.SlowFor
			if d == 0 {
				d = 2 * time.Second
			}
			select {
			case <-time.After(d):
			case <-r.Context().Done():
				return
			}
			for k, v := range rec.Header() {
				w.Header()[k] = v
			}
			w.WriteHeader(rec.Code)
			_, _ = w.Write(rec.Body.Bytes())
		}
	})
}

// hangUp closes the connection without an answer.
func hangUp(w http.ResponseWriter) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		panic("cloudtest: the server cannot hang up (HTTP/2?)")
	}
	c, _, err := hj.Hijack()
	if err == nil {
		_ = c.Close()
	}
}
