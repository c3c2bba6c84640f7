// Package watch tells the watch command when the configuration changed:
// it watches the configuration directory (not single files: editors save
// by writing a temporary file and renaming it over the original) and the
// files the configuration points at elsewhere (nni_file search spaces, var
// files), drops events that cannot change the configuration (editor temp
// and backup files, chmod, trialform's own .trialform directory), and
// debounces bursts into one Batch. Where the filesystem gives no events
// (NFS, some container mounts), Options.Poll switches to polling.
package watch

import (
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"
)

// Options configure a Watcher.
type Options struct {
	// Dir is the configuration directory: every *.hcl in it counts.
	Dir string
	// Extra are other files that count (absolute or relative to Dir).
	Extra []string
	// Poll, if > 0, polls every Poll instead of using inotify.
	Poll time.Duration
	// Quiet is how long events must stop before a batch is sent (default
	// 200ms); MaxDelay bounds how long a continuous burst can hold one
	// back (default 2s).
	Quiet, MaxDelay time.Duration
}

// Batch is one debounced set of changes.
type Batch struct {
	Paths []string // changed files, sorted, absolute
	// Rescan is set when events were lost (inotify queue overflow): the
	// receiver must reload everything.
	Rescan bool
	// Err is a watcher error that stopped nothing (reported once).
	Err error
}

// Watcher sends a Batch on C after each burst of relevant changes.
type Watcher struct {
	C <-chan Batch

	opts  Options
	out   chan Batch
	raw   chan rawEvent
	done  chan struct{}
	wg    sync.WaitGroup
	fsw   *fsnotify.Watcher
	mu    sync.Mutex
	extra map[string]bool    // absolute paths
	dirs  map[string]bool    // directories added to fsw
	prev  map[string]fileKey // polling: the last snapshot
}

type rawEvent struct {
	path   string
	rescan bool
	err    error
}

// New starts watching. Close stops it.
func New(o Options) (*Watcher, error) {
	if o.Quiet <= 0 {
		o.Quiet = 200 * time.Millisecond
	}
	if o.MaxDelay <= 0 {
		o.MaxDelay = 2 * time.Second
	}
	dir, err := filepath.Abs(o.Dir)
	if err != nil {
		return nil, err
	}
	o.Dir = dir
	w := &Watcher{
		opts: o,
		out:  make(chan Batch, 1),
		raw:  make(chan rawEvent, 64),
		done: make(chan struct{}),
		dirs: map[string]bool{},
	}
	w.C = w.out
	w.extra = w.absAll(o.Extra)
	if o.Poll > 0 {
		// The first snapshot is taken now: a change made after New
		// returns is seen by the first poll.
		w.mu.Lock()
		w.prev = w.snapshotLocked()
		w.mu.Unlock()
		w.wg.Add(1)
		go w.poll()
	} else {
		if w.fsw, err = fsnotify.NewWatcher(); err != nil {
			return nil, err
		}
		if err := w.fsw.Add(dir); err != nil {
			w.fsw.Close()
			return nil, err
		}
		w.dirs[dir] = true
		w.addExtraDirs()
		w.wg.Add(1)
		go w.pump()
	}
	w.wg.Add(1)
	go w.debounce()
	return w, nil
}

// SetExtra replaces the set of extra files (the configuration's own
// references change as it is edited).
//
// Starting or stopping to watch a file is not a change of it: when
// polling, the files added are taken into the snapshot as they are now.
func (w *Watcher) SetExtra(paths []string) {
	w.mu.Lock()
	w.extra = w.absAll(paths)
	if w.prev != nil {
		for p := range w.prev {
			if !Relevant(w.opts.Dir, w.extra, p) {
				delete(w.prev, p)
			}
		}
		for p := range w.extra {
			if _, ok := w.prev[p]; !ok {
				w.statInto(w.prev, p)
			}
		}
	}
	w.mu.Unlock()
	if w.fsw != nil {
		w.addExtraDirs()
	}
}

// Close stops the watcher and closes C.
func (w *Watcher) Close() error {
	select {
	case <-w.done:
		return nil
	default:
	}
	close(w.done)
	var err error
	if w.fsw != nil {
		err = w.fsw.Close()
	}
	w.wg.Wait()
	close(w.out)
	return err
}

func (w *Watcher) absAll(paths []string) map[string]bool {
	m := map[string]bool{}
	for _, p := range paths {
		if p == "" {
			continue
		}
		if !filepath.IsAbs(p) {
			p = filepath.Join(w.opts.Dir, p)
		}
		m[filepath.Clean(p)] = true
	}
	return m
}

// addExtraDirs watches the directories of extra files (their directory,
// not the file, so a rename-save is seen).
func (w *Watcher) addExtraDirs() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for p := range w.extra {
		d := filepath.Dir(p)
		if w.dirs[d] {
			continue
		}
		if err := w.fsw.Add(d); err == nil {
			w.dirs[d] = true
		}
	}
}

// Relevant reports whether a change to path can change the configuration
// read from dir, given the extra files.
func Relevant(dir string, extra map[string]bool, path string) bool {
	path = filepath.Clean(path)
	if extra[path] {
		return true
	}
	if filepath.Dir(path) != dir {
		return false
	}
	return strings.HasSuffix(path, ".hcl") && !TempFile(filepath.Base(path))
}

// TempFile reports whether name looks like an editor's temporary, swap
// or backup file (vim, emacs, JetBrains, VS Code, sed -i, atomic savers).
func TempFile(name string) bool {
	switch {
	case name == "4913", // vim's write test
		strings.HasPrefix(name, ".#"),                                // emacs lock
		strings.HasPrefix(name, "#") && strings.HasSuffix(name, "#"), // emacs autosave
		strings.HasSuffix(name, "~"),                                 // backups
		strings.HasSuffix(name, ".swp"), strings.HasSuffix(name, ".swx"),
		strings.HasSuffix(name, ".tmp"), strings.HasSuffix(name, "___jb_tmp___"),
		strings.HasSuffix(name, "___jb_old___"),
		strings.HasPrefix(name, ".trialform"):
		return true
	}
	return false
}

func (w *Watcher) send(e rawEvent) {
	select {
	case w.raw <- e:
	case <-w.done:
	}
}

// pump forwards relevant fsnotify events.
func (w *Watcher) pump() {
	defer w.wg.Done()
	for {
		select {
		case <-w.done:
			return
		case ev, ok := <-w.fsw.Events:
			if !ok {
				return
			}
			if ev.Op == fsnotify.Chmod {
				continue
			}
			w.mu.Lock()
			rel := Relevant(w.opts.Dir, w.extra, ev.Name)
			w.mu.Unlock()
			if rel {
				w.send(rawEvent{path: filepath.Clean(ev.Name)})
			}
		case err, ok := <-w.fsw.Errors:
			if !ok {
				return
			}
			if errors.Is(err, fsnotify.ErrEventOverflow) {
				w.send(rawEvent{rescan: true})
			} else {
				w.send(rawEvent{err: err})
			}
		}
	}
}

// fileKey is what polling compares.
type fileKey struct {
	size  int64
	mtime time.Time
	mode  os.FileMode
}

func (w *Watcher) statInto(m map[string]fileKey, p string) {
	if fi, err := os.Stat(p); err == nil {
		m[p] = fileKey{fi.Size(), fi.ModTime(), fi.Mode()}
	}
}

// snapshotLocked stats every file that counts; w.mu is held.
func (w *Watcher) snapshotLocked() map[string]fileKey {
	m := map[string]fileKey{}
	if ents, err := os.ReadDir(w.opts.Dir); err == nil {
		for _, e := range ents {
			p := filepath.Join(w.opts.Dir, e.Name())
			if Relevant(w.opts.Dir, nil, p) {
				w.statInto(m, p)
			}
		}
	}
	for p := range w.extra {
		w.statInto(m, p)
	}
	return m
}

// poll compares snapshots every Poll.
func (w *Watcher) poll() {
	defer w.wg.Done()
	t := time.NewTicker(w.opts.Poll)
	defer t.Stop()
	for {
		select {
		case <-w.done:
			return
		case <-t.C:
		}
		var changed []string
		w.mu.Lock()
		cur := w.snapshotLocked()
		for p, k := range cur {
			if old, ok := w.prev[p]; !ok || old != k {
				changed = append(changed, p)
			}
		}
		for p := range w.prev {
			if _, ok := cur[p]; !ok {
				changed = append(changed, p)
			}
		}
		w.prev = cur
		w.mu.Unlock()
		for _, p := range changed {
			w.send(rawEvent{path: p})
		}
	}
}

// debounce turns raw events into batches: a batch goes out once events
// have been quiet for Quiet, or MaxDelay after the first event of a burst.
func (w *Watcher) debounce() {
	defer w.wg.Done()
	var (
		pending  = map[string]bool{}
		rescan   bool
		quiet    *time.Timer
		deadline *time.Timer
		quietC   <-chan time.Time
		deadC    <-chan time.Time
	)
	flush := func() {
		b := Batch{Rescan: rescan}
		for p := range pending {
			b.Paths = append(b.Paths, p)
		}
		sort.Strings(b.Paths)
		pending, rescan = map[string]bool{}, false
		quiet.Stop()
		deadline.Stop()
		quietC, deadC = nil, nil
		select {
		case w.out <- b:
		case <-w.done:
		}
	}
	for {
		select {
		case <-w.done:
			return
		case e := <-w.raw:
			if e.err != nil {
				select {
				case w.out <- Batch{Err: e.err}:
				case <-w.done:
					return
				}
				continue
			}
			if e.rescan {
				rescan = true
			} else {
				pending[e.path] = true
			}
			if quietC == nil {
				quiet = time.NewTimer(w.opts.Quiet)
				deadline = time.NewTimer(w.opts.MaxDelay)
				quietC, deadC = quiet.C, deadline.C
			} else {
				quiet.Reset(w.opts.Quiet)
			}
		case <-quietC:
			flush()
		case <-deadC:
			flush()
		}
	}
}
