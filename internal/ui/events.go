package ui

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/trialform/trialform/state"
)

// watcher polls the backend's stamp of the state and tells subscribers
// when it changed. Polling (every 200ms by default) rather than inotify:
// the local backend replaces its files by rename, which a watch on a file
// itself would lose, and its stamp is a few stats. A backend without
// stamps is read on each tick.
type watcher struct {
	data *store
	// onChange runs (in its own goroutine) for each new version read.
	onChange func(*snapshot)
	mu       sync.Mutex
	subs     map[chan uint64]bool
	done     chan struct{}
	once     sync.Once
}

func newWatcher(d *store, every time.Duration, onChange func(*snapshot)) *watcher {
	w := &watcher{data: d, onChange: onChange, subs: map[chan uint64]bool{}, done: make(chan struct{})}
	go w.loop(every)
	return w
}

func (w *watcher) loop(every time.Duration) {
	// The state's stamp covers the refresh marks too (a refresh that
	// found nothing new writes only those).
	last, _, _ := state.StateStampOf(w.data.b)
	lastSerial := uint64(0)
	if !w.stamped() {
		if sn := w.data.current(); sn.err == nil {
			lastSerial = sn.st.Serial
		}
	}
	// A backend that tells of changes (pg's NOTIFY) is read at once on
	// one; the ticker stays the fallback (and the only way for the
	// others).
	var notified <-chan struct{}
	if cn, ok := w.data.b.(state.ChangeNotifier); ok {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go func() {
			select {
			case <-w.done:
				cancel()
			case <-ctx.Done():
			}
		}()
		if c, err := cn.Changes(ctx); err == nil {
			notified = c
		}
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-w.done:
			return
		case <-t.C:
		case _, ok := <-notified:
			if !ok {
				notified = nil
				continue
			}
		}
		k, stamped, err := state.StateStampOf(w.data.b)
		if err != nil || (stamped && (k.State == "" || k == last)) {
			continue
		}
		last = k
		sn := w.data.current()
		if sn.err != nil {
			continue // caught mid-edit by hand: wait for a readable version
		}
		if !stamped {
			if sn.st.Serial == lastSerial {
				continue
			}
			lastSerial = sn.st.Serial
		}
		if w.onChange != nil {
			go w.onChange(sn)
		}
		w.mu.Lock()
		for c := range w.subs {
			select {
			case c <- sn.st.Serial:
			default: // the subscriber has an event pending; it will refetch anyway
			}
		}
		w.mu.Unlock()
	}
}

// stamped reports whether the backend tells versions by stamps.
func (w *watcher) stamped() bool {
	_, ok := w.data.b.(state.StateStamper)
	return ok
}

func (w *watcher) subscribe() chan uint64 {
	c := make(chan uint64, 1)
	w.mu.Lock()
	w.subs[c] = true
	w.mu.Unlock()
	return c
}

func (w *watcher) unsubscribe(c chan uint64) {
	w.mu.Lock()
	delete(w.subs, c)
	w.mu.Unlock()
}

func (w *watcher) stop() { w.once.Do(func() { close(w.done) }) }

// apiEvents streams "state" events (data: the state's serial) when the
// state file changes, and a comment every 15s to keep proxies open.
func (s *Server) apiEvents(w http.ResponseWriter, r *http.Request) {
	fl, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	stream(w)
	c := s.watch.subscribe()
	defer s.watch.unsubscribe(c)
	sn := s.data.current()
	serial := uint64(0)
	if sn.st != nil {
		serial = sn.st.Serial
	}
	fmt.Fprintf(w, "retry: 1000\nevent: hello\ndata: %d\n\n", serial)
	fl.Flush()
	keep := time.NewTicker(15 * time.Second)
	defer keep.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-s.watch.done:
			return
		case serial := <-c:
			fmt.Fprintf(w, "event: state\ndata: %d\n\n", serial)
			fl.Flush()
		case <-keep.C:
			fmt.Fprint(w, ": keep-alive\n\n")
			fl.Flush()
		}
	}
}
