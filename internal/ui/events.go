package ui

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/trialform/trialform/state"
)

// watcher tells subscribers when the backend's stamp of the state
// changed. The local backend's directory is watched with inotify (a save
// is seen at once; a watch on the directory, not on the files, sees
// files replaced by rename), and its stamp polled as well (every 200ms
// by default: a directory inotify cannot watch, a state.json that is a
// link elsewhere); a backend that tells of changes (pg's NOTIFY) is read
// at once on one. A backend without stamps is read on each tick.
type watcher struct {
	data *store
	// onChange runs (in its own goroutine) for each new version read.
	onChange func(*snapshot)
	mu       sync.Mutex
	subs     map[chan struct{}]bool
	done     chan struct{}
	once     sync.Once
}

func newWatcher(d *store, every time.Duration, onChange func(*snapshot)) *watcher {
	w := &watcher{data: d, onChange: onChange, subs: map[chan struct{}]bool{}, done: make(chan struct{})}
	go w.loop(every)
	return w
}

// notifications returns a channel that receives a value after changes
// of the state, when the backend can tell (nil when it cannot).
func (w *watcher) notifications(ctx context.Context) <-chan struct{} {
	if cn, ok := w.data.b.(state.ChangeNotifier); ok {
		if c, err := cn.Changes(ctx); err == nil {
			return c
		}
		return nil
	}
	dl, ok := w.data.b.(interface{ Dir() string })
	if !ok || w.data.b.Name() != state.LocalBackend {
		return nil
	}
	fw, err := fsnotify.NewWatcher()
	if err != nil {
		return nil
	}
	if err := fw.Add(dl.Dir()); err != nil {
		fw.Close() // not there yet: the poll sees it made
		return nil
	}
	c := make(chan struct{}, 1)
	go func() {
		defer fw.Close()
		for {
			select {
			case <-ctx.Done():
				return
			case ev, ok := <-fw.Events:
				if !ok {
					return
				}
				if ev.Op == fsnotify.Chmod {
					continue
				}
			case _, ok := <-fw.Errors:
				if !ok {
					return
				}
			}
			select {
			case c <- struct{}{}:
			default:
			}
		}
	}()
	return c
}

func (w *watcher) loop(every time.Duration) {
	// The state's stamp covers the refresh marks too (a refresh that
	// found nothing new writes only those).
	last, _, _ := state.StateStampOf(w.data.b)
	lastVer := uint64(0)
	if sn := w.data.current(); sn.err == nil {
		lastVer = sn.ver
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-w.done:
			cancel()
		case <-ctx.Done():
		}
	}()
	notified := w.notifications(ctx)
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
			if sn.ver == lastVer {
				continue
			}
		}
		if sn.ver != lastVer && w.onChange != nil {
			go w.onChange(sn)
		}
		lastVer = sn.ver
		w.mu.Lock()
		for c := range w.subs {
			select {
			case c <- struct{}{}:
			default: // the subscriber has a wake-up pending: it reads the newest version then
			}
		}
		w.mu.Unlock()
	}
}

func (w *watcher) subscribe() chan struct{} {
	c := make(chan struct{}, 1)
	w.mu.Lock()
	w.subs[c] = true
	w.mu.Unlock()
	return c
}

func (w *watcher) unsubscribe(c chan struct{}) {
	w.mu.Lock()
	delete(w.subs, c)
	w.mu.Unlock()
}

func (w *watcher) stop() { w.once.Do(func() { close(w.done) }) }

// apiEvents streams the state's changes: first a "hello" event (data:
// {"version", "serial"} of the state as the stream starts), then a
// "state" event (EventJSON) each time it changes, carrying the rows of
// the trials that changed since the stream's previous event, and a
// comment every 15s to keep proxies open. Every event carries the
// version it starts from: a page that shows another version (it missed
// one, or fetched a newer one meanwhile) fetches what it shows again.
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
	ver := sn.ver
	fmt.Fprintf(w, "retry: 1000\nevent: hello\ndata: {\"version\":%d,\"serial\":%d}\n\n", ver, serial)
	fl.Flush()
	keep := time.NewTicker(15 * time.Second)
	defer keep.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-s.watch.done:
			return
		case <-c:
			sn := s.data.current()
			if sn.err != nil || sn.ver == ver {
				// Nothing new for this stream: a change it already
				// greeted with (notified after the stream took its
				// first version) made an event "from 1 to 1".
				continue
			}
			fmt.Fprintf(w, "event: state\ndata: %s\n\n", s.event(sn, ver))
			fl.Flush()
			ver = sn.ver
		case <-keep.C:
			fmt.Fprint(w, ": keep-alive\n\n")
			fl.Flush()
		}
	}
}
