package k8sstate

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/trialform/trialform/state"
)

// layoutVersion is the version of this backend's objects (the index and
// its parts); a newer one is refused.
const layoutVersion = 1

// bucketSize is how many trials (by sequence number) share a part: a
// change to one trial rewrites its bucket, not the experiment.
const bucketSize = 1024

// chunkSize is the most bytes of a part one Secret holds (a Secret holds
// at most 1 MiB, and its metadata counts); larger parts continue in
// further Secrets. A variable for tests.
var chunkSize = 1000 * 1024

// Data keys of the Secrets.
const (
	keyIndex = "index.json.gz"
	keyChunk = "chunk.gz"
)

// index is the content of the index Secret: which Secrets hold the state.
type index struct {
	Layout  int    `json:"layout"`
	Version int    `json:"version"` // the state's format version
	Lineage string `json:"lineage"`
	Serial  uint64 `json:"serial"`
	// Write identifies the save that wrote this index (a save whose
	// answer was lost finds its own write).
	Write       string               `json:"write"`
	Experiments map[string]*expEntry `json:"experiments"`
}

// expEntry is one experiment's parts.
type expEntry struct {
	// Rev is the serial of the save that last changed the experiment:
	// the per-experiment conflict check.
	Rev   uint64              `json:"rev"`
	Parts map[string]*partRef `json:"parts"` // "head", "t0", "t1", ...
}

// partRef names the Secrets of one part, in order, and what they hold.
type partRef struct {
	Secrets []string `json:"secrets"`
	SHA     string   `json:"sha"` // of the uncompressed JSON
	Trials  int      `json:"trials,omitempty"`
}

func (x *index) clone() *index {
	c := *x
	c.Experiments = make(map[string]*expEntry, len(x.Experiments))
	for n, e := range x.Experiments {
		ce := &expEntry{Rev: e.Rev, Parts: maps.Clone(e.Parts)}
		c.Experiments[n] = ce
	}
	return &c
}

// cached is what this client last read or wrote.
type cached struct {
	rv  string // the index Secret's resourceVersion
	idx *index
	// parts holds the content of each part read or written, by SHA,
	// checked against it.
	parts map[string][]byte
}

// readIndex reads the index Secret: nil (and no error) when there is none.
func (b *Backend) readIndex(ctx context.Context) (*index, string, error) {
	sec, err := b.c.getSecret(ctx, b.indexName())
	if apierrors.IsNotFound(err) {
		return nil, "", b.checkNamespace(ctx)
	}
	if err != nil {
		return nil, "", fmt.Errorf("read state: %w", err)
	}
	idx, err := decodeIndex(sec)
	if err != nil {
		return nil, "", b.corrupt(b.indexName(), err.Error())
	}
	return idx, sec.ResourceVersion, nil
}

func decodeIndex(sec *corev1.Secret) (*index, error) {
	raw, ok := sec.Data[keyIndex]
	if !ok {
		return nil, fmt.Errorf("has no %s", keyIndex)
	}
	data, err := gunzip(raw)
	if err != nil {
		return nil, err
	}
	var idx index
	if err := json.Unmarshal(data, &idx); err != nil {
		return nil, fmt.Errorf("is not valid JSON (%v)", err)
	}
	if idx.Lineage == "" {
		return nil, errors.New(`has no "lineage"`)
	}
	if idx.Experiments == nil {
		idx.Experiments = map[string]*expEntry{}
	}
	for n, e := range idx.Experiments {
		if e == nil || e.Parts["head"] == nil {
			return nil, fmt.Errorf("has no head part for experiment %q", n)
		}
	}
	return &idx, nil
}

// corrupt reports a Secret of the state that cannot be read, and the
// repairs that work on this backend (no file, no backup beside it).
func (b *Backend) corrupt(secret, problem string) error {
	return &state.CorruptError{Path: "Secret " + b.ns + "/" + secret + ", part of the state,", Problem: problem,
		Repair: "Restore it from a backup of the namespace, or replace the whole state with a good copy (a file `trialform state pull` wrote): `trialform state push -force FILE`"}
}

// checkFormat refuses an index this build cannot read.
func (b *Backend) checkFormat(idx *index) error {
	if idx.Layout > layoutVersion || idx.Version > state.FormatVersion {
		return &state.NewerFormatError{Path: "Secret " + b.ns + "/" + b.indexName(), Version: max(idx.Version, idx.Layout), Supported: state.FormatVersion}
	}
	return nil
}

// Exists reports whether the index Secret exists.
func (b *Backend) Exists() (bool, error) {
	ctx, cancel := background()
	defer cancel()
	_, err := b.c.getSecretMeta(ctx, b.indexName())
	if apierrors.IsNotFound(err) {
		return false, b.checkNamespace(ctx)
	}
	if err != nil {
		return false, fmt.Errorf("read state: %w", err)
	}
	return true, nil
}

// checkNamespace, when the index is not there, refuses a namespace that
// does not exist (a typo in the block): it read as an empty state, so
// init, show and plan went on as for a new one. Once it was found, it is
// not asked again.
func (b *Backend) checkNamespace(ctx context.Context) error {
	if b.nsFound.Load() {
		return nil
	}
	if b.c.namespaceMissing(ctx, b.indexName()) {
		return fmt.Errorf("the kubernetes backend's namespace %q does not exist on the apiserver %s: correct namespace in the backend block "+
			"(without one, the kubeconfig context's namespace is used), or create it: kubectl create namespace %s", b.ns, b.c.host, b.ns)
	}
	b.nsFound.Store(true)
	return nil
}

// Load reads the index, then the parts it names (those this client has
// not read already), and returns the state they make up.
func (b *Backend) Load() (*state.State, error) {
	return b.LoadContext(context.Background())
}

// LoadContext is Load, given up when ctx ends (state.ContextReader): the
// cache and the loaded index move only once the whole read succeeded.
func (b *Backend) LoadContext(ctx context.Context) (*state.State, error) {
	ctx, cancel := within(ctx)
	defer cancel()
	// (another read may hold it through an outage: the dashboard's)
	if err := b.mu.LockContext(ctx); err != nil {
		return nil, fmt.Errorf("read state: %w", err)
	}
	defer b.mu.Unlock()
	b.warnings = nil
	c, err := b.refresh(ctx)
	if err != nil {
		return nil, err
	}
	if c == nil {
		b.loaded = nil
		return state.New(), nil
	}
	b.loaded = c.idx
	return b.assemble(c)
}

// Peek reads the state as Load does without making it what this client's
// next save compares with (state.Peeker): neither the index this client
// loaded nor the cache a save goes on from moves, so a reader beside this
// client's writer (the controller's dashboard beside its pass) can neither
// make the writer's save refuse its own change ("experiment v changed, but
// this command locked only w (a bug: report it)") nor let it write over a
// change someone else made to its experiments since it loaded them. The
// parts already cached are reused.
func (b *Backend) Peek() (*state.State, error) {
	return b.PeekContext(context.Background())
}

// PeekContext is Peek, given up when ctx ends (state.ContextReader).
func (b *Backend) PeekContext(ctx context.Context) (*state.State, error) {
	ctx, cancel := within(ctx)
	defer cancel()
	// (another read may hold it through an outage: the dashboard's)
	if err := b.mu.LockContext(ctx); err != nil {
		return nil, fmt.Errorf("read state: %w", err)
	}
	defer b.mu.Unlock()
	have := b.peeked
	if have == nil {
		have = b.cache
	}
	c, err := b.fetch(ctx, have)
	if err != nil {
		return nil, err
	}
	b.peeked = c
	if c == nil {
		return state.New(), nil
	}
	return b.assemble(c)
}

var (
	_ state.Peeker        = (*Backend)(nil)
	_ state.ContextReader = (*Backend)(nil)
)

// refresh brings the cache up to the stored state (nil when there is
// none), reading the parts it lacks. The caller holds b.mu.
func (b *Backend) refresh(ctx context.Context) (*cached, error) {
	c, err := b.fetch(ctx, b.cache)
	if err != nil {
		return nil, err
	}
	if c != b.cache {
		b.cache = c
		b.trustRefs = false
	}
	return c, nil
}

// fetch reads the stored state (nil when there is none): have itself when
// it is still the stored version, else the index and the parts have lacks.
// It changes nothing of b's.
func (b *Backend) fetch(ctx context.Context, have *cached) (*cached, error) {
	for attempt := 0; ; attempt++ {
		idx, rv, err := b.readIndex(ctx)
		if err != nil {
			return nil, err
		}
		if idx == nil {
			return nil, nil
		}
		if err := b.checkFormat(idx); err != nil {
			return nil, err
		}
		if have != nil && have.rv == rv {
			return have, nil
		}
		parts := map[string][]byte{}
		old := map[string][]byte{}
		if have != nil {
			old = have.parts
		}
		missing, err := b.readParts(ctx, idx, old, parts)
		if err != nil {
			return nil, err
		}
		if missing != "" {
			// A part gone: a writer replaced it after this read of the
			// index (read again), or it was deleted behind trialform's
			// back (the index is the same).
			_, rv2, err := b.readIndex(ctx)
			if err != nil {
				return nil, err
			}
			if rv2 == rv || attempt >= 20 {
				return nil, b.corrupt(b.indexName(), fmt.Sprintf("names Secret %s, which does not exist: it was deleted outside trialform", missing))
			}
			continue
		}
		return &cached{rv: rv, idx: idx, parts: parts}, nil
	}
}

// readParts reads every part idx names into parts (reusing old's); the
// name of a Secret that does not exist, if any.
func (b *Backend) readParts(ctx context.Context, idx *index, old, parts map[string][]byte) (missing string, err error) {
	type job struct {
		exp, key string
		ref      *partRef
	}
	var jobs []job
	for n, e := range idx.Experiments {
		for k, p := range e.Parts {
			if data, ok := old[p.SHA]; ok {
				parts[p.SHA] = data
				continue
			}
			jobs = append(jobs, job{n, k, p})
		}
	}
	var mu sync.Mutex
	err = parallel(len(jobs), func(i int) error {
		j := jobs[i]
		data, miss, err := b.readPart(ctx, j.ref)
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			return fmt.Errorf("read state: part %s of experiment %q: %w", j.key, j.exp, err)
		}
		if miss != "" {
			missing = miss
			return nil
		}
		parts[j.ref.SHA] = data
		return nil
	})
	return missing, err
}

// readPart reads one part's Secrets and checks the content.
func (b *Backend) readPart(ctx context.Context, p *partRef) ([]byte, string, error) {
	b.partReads.Add(1)
	var gz []byte
	for _, name := range p.Secrets {
		sec, err := b.c.getSecret(ctx, name)
		if apierrors.IsNotFound(err) {
			return nil, name, nil
		}
		if err != nil {
			return nil, "", err
		}
		gz = append(gz, sec.Data[keyChunk]...)
	}
	data, err := gunzip(gz)
	if err != nil {
		return nil, "", b.corrupt(strings.Join(p.Secrets, ", "), err.Error())
	}
	if shaOf(data) != p.SHA {
		return nil, "", b.corrupt(strings.Join(p.Secrets, ", "), "does not hold what the index says (its checksum differs): it was changed outside trialform")
	}
	return data, "", nil
}

// assemble decodes the cached parts into a new State.
func (b *Backend) assemble(c *cached) (*state.State, error) {
	s := &state.State{Version: state.FormatVersion, Serial: c.idx.Serial, Lineage: c.idx.Lineage, Experiments: make(map[string]*state.Experiment, len(c.idx.Experiments))}
	for n, e := range c.idx.Experiments {
		var exp state.Experiment
		head := e.Parts["head"]
		if err := json.Unmarshal(c.parts[head.SHA], &exp); err != nil {
			return nil, b.corrupt(strings.Join(head.Secrets, ", "), fmt.Sprintf("is not an experiment (%v)", err))
		}
		exp.Trials = map[string]*state.Trial{}
		for k, p := range e.Parts {
			if k == "head" {
				continue
			}
			var ts map[string]*state.Trial
			if err := json.Unmarshal(c.parts[p.SHA], &ts); err != nil {
				return nil, b.corrupt(strings.Join(p.Secrets, ", "), fmt.Sprintf("is not a set of trials (%v)", err))
			}
			for id, t := range ts {
				if t == nil {
					return nil, b.corrupt(strings.Join(p.Secrets, ", "), fmt.Sprintf("has trial %q set to null", id))
				}
				exp.Trials[id] = t
			}
		}
		s.Experiments[n] = &exp
	}
	return s, nil
}

// Encoding.

// encodedExp is one experiment's parts as JSON.
type encodedExp struct {
	parts  map[string][]byte   // encoded
	reused map[string]*partRef // not encoded: as stored
	trials map[string]int      // trials per bucket
}

func bucketKey(seq int) string {
	if seq < 0 {
		seq = 0
	}
	return "t" + strconv.Itoa(seq/bucketSize)
}

// encodeExp encodes an experiment's head and the buckets of its trials
// that need it: with old (its parts as stored) and touched (nil: every
// bucket) a bucket not touched whose trial count is old's is reused as
// stored, not encoded; with headOnly no bucket is encoded (only counted).
func encodeExp(e *state.Experiment, old *expEntry, touched map[string]bool, headOnly bool) (*encodedExp, error) {
	out := &encodedExp{parts: map[string][]byte{}, reused: map[string]*partRef{}, trials: map[string]int{}}
	h := *e
	h.Trials = nil
	hb, err := json.Marshal(&h)
	if err != nil {
		return nil, err
	}
	out.parts["head"] = hb
	buckets := map[string]map[string]*state.Trial{}
	for id, t := range e.Trials {
		k := bucketKey(t.Seq)
		if buckets[k] == nil {
			buckets[k] = map[string]*state.Trial{}
		}
		buckets[k][id] = t
		out.trials[k]++
	}
	if headOnly {
		return out, nil
	}
	for k, ts := range buckets {
		if touched != nil && !touched[k] && old != nil {
			if r := old.Parts[k]; r != nil && r.Trials == len(ts) {
				out.reused[k] = r
				continue
			}
		}
		tb, err := json.Marshal(ts)
		if err != nil {
			return nil, fmt.Errorf("trials of %s: %w", k, err)
		}
		out.parts[k] = tb
	}
	return out, nil
}

func shaOf(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

func gzipBytes(b []byte) []byte {
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
	zw.Write(b)
	zw.Close()
	return buf.Bytes()
}

func gunzip(b []byte) ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("is not gzip data (%v)", err)
	}
	data, err := io.ReadAll(zr)
	if err != nil {
		return nil, fmt.Errorf("is truncated or damaged gzip data (%v)", err)
	}
	return data, nil
}

func randomID() string {
	var b [6]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// parallel runs f(0..n-1), at most 8 at a time; the first error.
func parallel(n int, f func(i int) error) error {
	if n == 0 {
		return nil
	}
	sem := make(chan struct{}, 8)
	errc := make(chan error, n)
	for i := range n {
		sem <- struct{}{}
		go func() {
			defer func() { <-sem }()
			errc <- f(i)
		}()
	}
	var first error
	for range n {
		if err := <-errc; err != nil && first == nil {
			first = err
		}
	}
	return first
}

// Saving.

// Save writes what changed in s (see the package comment).
func (b *Backend) Save(s *state.State) error {
	ctx, cancel := background()
	defer cancel()
	b.mu.Lock()
	defer b.mu.Unlock()
	ch, err := b.prepare(ctx, s, nil)
	if err != nil || ch == nil {
		return err
	}
	serial, err := b.commit(ctx, ch)
	if err == nil {
		s.Serial = serial
	}
	return err
}

// Prepare computes the change and bumps s.Serial; commit writes it.
func (b *Backend) Prepare(s *state.State) (func() error, error) { return b.prepareCommit(s, nil) }

// PrepareTrials is Prepare for a caller that names every trial changed
// since its last save of s: only the buckets holding those trials (and
// those whose trial count changed) are encoded and compared.
func (b *Backend) PrepareTrials(s *state.State, refs []state.TrialRef) (func() error, error) {
	if refs == nil {
		refs = []state.TrialRef{}
	}
	return b.prepareCommit(s, refs)
}

func (b *Backend) prepareCommit(s *state.State, refs []state.TrialRef) (func() error, error) {
	ctx, cancel := background()
	defer cancel()
	b.mu.Lock()
	defer b.mu.Unlock()
	ch, err := b.prepare(ctx, s, refs)
	if err != nil || ch == nil {
		return nil, err
	}
	return func() error {
		ctx, cancel := background()
		defer cancel()
		b.mu.Lock()
		defer b.mu.Unlock()
		_, err := b.commit(ctx, ch)
		return err
	}, nil
}

// change is a prepared save.
type change struct {
	scope   map[string]bool // nil: the whole state
	lineage string
	version int
	// base is the index the change was computed from.
	base   *index
	baseRV string
	// exps: for each experiment in scope present in s, its parts; an
	// experiment in scope absent from s is removed.
	exps    map[string]*encodedExp
	removed []string
	// replace: a conflict is not retried nor merged (Replace).
	replace bool
}

// prepare computes what saving s writes (nil: nothing) and bumps
// s.Serial; refs, when not nil, names every trial changed since this
// client's last save of s (PrepareTrials). The caller holds b.mu.
func (b *Backend) prepare(ctx context.Context, s *state.State, refs []state.TrialRef) (*change, error) {
	if s == nil {
		return nil, errors.New("save state: no state")
	}
	if s.Lineage == "" {
		return nil, errors.New("save state: the state has no lineage (make states with New or Load)")
	}
	if s.Version > state.FormatVersion {
		return nil, fmt.Errorf("save state: the state has format version %d, this trialform writes %d", s.Version, state.FormatVersion)
	}
	scope := b.scope()
	c := b.cache
	if c == nil || (scope == nil && (c.idx.Serial != s.Serial || c.idx.Lineage != s.Lineage)) {
		var err error
		if c, err = b.refresh(ctx); err != nil {
			return nil, err
		}
	}
	ch := &change{scope: scope, lineage: s.Lineage, version: state.FormatVersion, exps: map[string]*encodedExp{}}
	if c == nil {
		if s.Serial != 0 {
			return nil, fmt.Errorf("save state: the index Secret %s/%s was deleted since the state was loaded (at serial %d); not saving over it. Find out what deleted it; `trialform state push` writes a state back", b.ns, b.indexName(), s.Serial)
		}
		ch.base = &index{Layout: layoutVersion, Version: state.FormatVersion, Lineage: s.Lineage, Experiments: map[string]*expEntry{}}
	} else {
		ch.base, ch.baseRV = c.idx, c.rv
		if c.idx.Lineage != s.Lineage || (scope == nil && c.idx.Serial != s.Serial) {
			return nil, &state.ConflictError{Path: b.Location(), FileLineage: c.idx.Lineage, StateLineage: s.Lineage, FileSerial: c.idx.Serial, StateSerial: s.Serial}
		}
	}
	// The buckets refs touch, by experiment (nil: compare everything:
	// names cover changes since this client's last save, which may not
	// be all the stored state lacks when it was read since).
	var touched map[string]map[string]bool
	if refs != nil && b.trustRefs {
		touched = map[string]map[string]bool{}
		for _, r := range refs {
			if touched[r.Experiment] == nil {
				touched[r.Experiment] = map[string]bool{}
			}
			if e := s.Experiments[r.Experiment]; e != nil && e.Trials[r.ID] != nil {
				touched[r.Experiment][bucketKey(e.Trials[r.ID].Seq)] = true
			}
		}
	}
	changed := false
	for n, e := range s.Experiments {
		in := scope == nil || scope[n]
		old := ch.base.Experiments[n]
		var t map[string]bool
		if touched != nil {
			if t = touched[n]; t == nil {
				t = map[string]bool{}
			}
		}
		enc, err := encodeExp(e, old, t, !in)
		if err != nil {
			return nil, fmt.Errorf("save state: experiment %q: %w", n, err)
		}
		if !in && touched != nil && len(touched[n]) > 0 {
			return nil, fmt.Errorf("save state: trials of experiment %q changed, but this command locked only %s: not saving them (a bug: report it)", n, strings.Join(sortedKeys(scope), ", "))
		}
		if !in {
			// Compared with what this client loaded: others may have
			// changed it since, which is no conflict.
			if b.loaded != nil && b.loaded.Lineage == s.Lineage {
				old = b.loaded.Experiments[n]
			}
			if old == nil || old.Parts["head"].SHA != shaOf(enc.parts["head"]) || !sameCounts(old, enc.trials) {
				return nil, fmt.Errorf("save state: experiment %q changed, but this command locked only %s: not saving it (a bug: report it)", n, strings.Join(sortedKeys(scope), ", "))
			}
			continue
		}
		ch.exps[n] = enc
		if old == nil || len(old.Parts) != len(enc.parts)+len(enc.reused) {
			changed = true
			continue
		}
		for k, p := range enc.parts {
			if r := old.Parts[k]; r == nil || r.SHA != shaOf(p) {
				changed = true
				break
			}
		}
	}
	known := ch.base.Experiments
	if scope != nil && b.loaded != nil && b.loaded.Lineage == s.Lineage {
		known = b.loaded.Experiments
	}
	for n := range known {
		if s.Experiments[n] != nil {
			continue
		}
		if scope != nil && !scope[n] {
			return nil, fmt.Errorf("save state: experiment %q was removed, but this command locked only %s: not saving it (a bug: report it)", n, strings.Join(sortedKeys(scope), ", "))
		}
		if ch.base.Experiments[n] != nil {
			ch.removed = append(ch.removed, n)
			changed = true
		}
	}
	if scope != nil {
		// Removed from the scope since the load, by no one: nothing.
		for n := range ch.base.Experiments {
			if s.Experiments[n] == nil && scope[n] && !slices.Contains(ch.removed, n) {
				ch.removed = append(ch.removed, n)
				changed = true
			}
		}
	}
	if c != nil && !changed {
		return nil, nil
	}
	s.Serial = ch.base.Serial + 1
	s.Version = state.FormatVersion
	return ch, nil
}

func sameCounts(e *expEntry, trials map[string]int) bool {
	n := 0
	for k, p := range e.Parts {
		if k == "head" {
			continue
		}
		n++
		if trials[k] != p.Trials {
			return false
		}
	}
	return n == len(trials)
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// commit writes a prepared change: the new parts, then the index. It
// returns the serial written. The caller holds b.mu.
func (b *Backend) commit(ctx context.Context, ch *change) (uint64, error) {
	// The parts to write: those whose content the base lacks.
	type newPart struct {
		exp, key string
		data     []byte
		ref      *partRef
	}
	var writes []*newPart
	refs := map[string]map[string]*partRef{}
	for n, enc := range ch.exps {
		refs[n] = map[string]*partRef{}
		old := ch.base.Experiments[n]
		for k, data := range enc.parts {
			sha := shaOf(data)
			if old != nil && old.Parts[k] != nil && old.Parts[k].SHA == sha {
				refs[n][k] = old.Parts[k]
				continue
			}
			p := &newPart{exp: n, key: k, data: data, ref: &partRef{SHA: sha, Trials: enc.trials[k]}}
			refs[n][k] = p.ref
			writes = append(writes, p)
		}
		for k, r := range enc.reused {
			refs[n][k] = r
		}
	}
	var created []string
	var mu sync.Mutex
	err := parallel(len(writes), func(i int) error {
		p := writes[i]
		names, err := b.writePart(ctx, p.exp, p.key, p.data)
		mu.Lock()
		created = append(created, names...)
		p.ref.Secrets = names
		mu.Unlock()
		return err
	})
	undo := func() {
		for _, n := range created {
			b.c.deleteSecret(ctx, n, "")
		}
	}
	if err != nil {
		undo()
		return 0, fmt.Errorf("save state: %w", err)
	}
	// Never a save under a lock someone released with force-unlock
	// (Replace checks before it begins).
	if !ch.replace {
		if err := b.checkHeld(ctx, "save state"); err != nil {
			undo()
			return 0, err
		}
	}
	b.trustRefs = false // until this commit is done
	base, baseRV := ch.base, ch.baseRV
	for attempt := 0; ; attempt++ {
		next := base.clone()
		next.Layout, next.Version, next.Lineage = layoutVersion, ch.version, ch.lineage
		next.Serial = base.Serial + 1
		next.Write = randomID()
		for n, r := range refs {
			old := base.Experiments[n]
			rev := next.Serial
			if old != nil && sameRefs(old.Parts, r) {
				rev = old.Rev
			}
			next.Experiments[n] = &expEntry{Rev: rev, Parts: r}
		}
		for _, n := range ch.removed {
			delete(next.Experiments, n)
		}
		if b.beforeIndexWrite != nil {
			b.beforeIndexWrite()
		}
		rv, err := b.writeIndex(ctx, next, baseRV)
		if err == nil {
			// Done: forget the replaced parts.
			parts := map[string][]byte{}
			if b.cache != nil {
				maps.Copy(parts, b.cache.parts)
			}
			for _, p := range writes {
				parts[p.ref.SHA] = p.data
			}
			keep := map[string]bool{}
			for _, e := range next.Experiments {
				for _, p := range e.Parts {
					keep[p.SHA] = true
				}
			}
			for sha := range parts {
				if !keep[sha] {
					delete(parts, sha)
				}
			}
			b.cache = &cached{rv: rv, idx: next, parts: parts}
			b.trustRefs = true
			b.deleteReplaced(ctx, base, next)
			return next.Serial, nil
		}
		if apierrors.IsNotFound(err) {
			undo()
			return 0, fmt.Errorf("save state: the index Secret %s/%s was deleted since the state was loaded; not saving over it. Find out what deleted it; `trialform state push` writes a state back", b.ns, b.indexName())
		}
		if !apierrors.IsConflict(err) && !apierrors.IsAlreadyExists(err) {
			undo()
			return 0, fmt.Errorf("save state: %w", err)
		}
		// Someone else wrote the index since base.
		cur, curRV, rerr := b.readIndex(ctx)
		if rerr != nil {
			undo()
			return 0, rerr
		}
		if cur == nil {
			undo()
			return 0, fmt.Errorf("save state: the index Secret %s/%s was deleted while saving; not saving over it", b.ns, b.indexName())
		}
		conflict := &state.ConflictError{Path: b.Location(), FileLineage: cur.Lineage, StateLineage: ch.lineage, FileSerial: cur.Serial, StateSerial: base.Serial}
		if ch.replace {
			undo()
			return 0, fmt.Errorf("the index Secret %s/%s changed while it was being replaced (serial %d now): another command wrote it without the lock; run this one again", b.ns, b.indexName(), cur.Serial)
		}
		if cur.Lineage != ch.lineage || ch.scope == nil || attempt >= 50 {
			undo()
			return 0, conflict
		}
		// An experiment lock: others' changes to other experiments
		// are not conflicts; a change to one of ours is.
		for n := range ch.scope {
			o, c := base.Experiments[n], cur.Experiments[n]
			if (o == nil) != (c == nil) || (o != nil && o.Rev != c.Rev) {
				undo()
				return 0, fmt.Errorf("save state: experiment %q was changed by someone else since it was loaded (its revision is %d, it was %d): %w", n, revOf(c), revOf(o), conflict)
			}
		}
		// The write is tried again on the index as it is now: the locks
		// are checked again first, since a force-unlock changes the index
		// (fenceIndex) to make a write checked before it fail here.
		if !ch.replace {
			if err := b.checkHeld(ctx, "save state"); err != nil {
				undo()
				return 0, err
			}
		}
		base, baseRV = cur, curRV
	}
}

func revOf(e *expEntry) uint64 {
	if e == nil {
		return 0
	}
	return e.Rev
}

func sameRefs(a, b map[string]*partRef) bool {
	if len(a) != len(b) {
		return false
	}
	for k, p := range a {
		if q := b[k]; q == nil || q.SHA != p.SHA {
			return false
		}
	}
	return true
}

// writePart writes one part as new Secrets, chunked; their names.
func (b *Backend) writePart(ctx context.Context, exp, key string, data []byte) ([]string, error) {
	gz := gzipBytes(data)
	base := "trialform-state-" + b.suffix + "-p-" + randomID()
	var names []string
	for i := 0; i == 0 || len(gz) > 0; i++ {
		n := min(len(gz), chunkSize)
		chunk := gz[:n]
		gz = gz[n:]
		name := base + "-" + strconv.Itoa(i)
		sec := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{
				Name:        name,
				Labels:      b.labels(rolePart),
				Annotations: map[string]string{annotExp: exp, annotPart: key + " " + strconv.Itoa(i)},
			},
			Type: corev1.SecretTypeOpaque,
			Data: map[string][]byte{keyChunk: chunk},
		}
		sec.Labels[labelExp] = hashName(exp)
		_, err := b.c.createSecret(ctx, sec)
		if err != nil && !apierrors.IsAlreadyExists(err) { // AlreadyExists: a retried create of ours
			return names, err
		}
		names = append(names, name)
	}
	return names, nil
}

// writeIndex writes the index: created when rv is "", else replaced if
// it is still at rv. It returns the new resourceVersion.
func (b *Backend) writeIndex(ctx context.Context, idx *index, rv string) (string, error) {
	data, err := json.Marshal(idx)
	if err != nil {
		return "", err
	}
	sec := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: b.indexName(), Labels: b.labels(roleIndex), ResourceVersion: rv},
		Type:       corev1.SecretTypeOpaque,
		Data:       map[string][]byte{keyIndex: gzipBytes(data)},
	}
	var out *corev1.Secret
	if rv == "" {
		out, err = b.c.createSecret(ctx, sec)
	} else {
		out, err = b.c.updateSecret(ctx, sec)
	}
	if err != nil {
		if apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) {
			// Maybe our own write, retried after its answer was lost.
			if cur, curRV, rerr := b.readIndex(ctx); rerr == nil && cur != nil && cur.Write == idx.Write {
				return curRV, nil
			}
		}
		return "", err
	}
	return out.ResourceVersion, nil
}

// deleteReplaced deletes the parts base had and next does not.
func (b *Backend) deleteReplaced(ctx context.Context, base, next *index) {
	keep := map[string]bool{}
	for _, e := range next.Experiments {
		for _, p := range e.Parts {
			for _, n := range p.Secrets {
				keep[n] = true
			}
		}
	}
	var gone []string
	for _, e := range base.Experiments {
		for _, p := range e.Parts {
			for _, n := range p.Secrets {
				if !keep[n] {
					gone = append(gone, n)
				}
			}
		}
	}
	if err := parallel(len(gone), func(i int) error { return b.c.deleteSecret(ctx, gone[i], "") }); err != nil {
		b.warn("some replaced state parts could not be deleted (%v); the next lock of the state deletes them", err)
	}
}

// collectGarbage deletes part Secrets no index names (left by a save
// that died between writing them and the index, or before deleting the
// replaced ones) of the experiments the caller has locked (all: nil).
func (b *Backend) collectGarbage(ctx context.Context, exps []string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	idx, _, err := b.readIndex(ctx)
	if err != nil || idx == nil {
		return
	}
	list, err := b.c.listSecretsMeta(ctx, b.selector(rolePart))
	if err != nil {
		return
	}
	hashes := map[string]bool{}
	for _, e := range exps {
		hashes[hashName(e)] = true
	}
	used := map[string]bool{}
	for _, e := range idx.Experiments {
		for _, p := range e.Parts {
			for _, n := range p.Secrets {
				used[n] = true
			}
		}
	}
	var gone []string
	for _, s := range list.Items {
		if used[s.Name] || (exps != nil && !hashes[s.Labels[labelExp]]) {
			continue
		}
		gone = append(gone, s.Name)
	}
	parallel(len(gone), func(i int) error { return b.c.deleteSecret(ctx, gone[i], "") })
}

// Replace makes s the state as it is, its lineage and serial included,
// whatever the index holds (state.Replacer: state push -force, init
// -migrate-state). Every experiment is written as new parts, then the
// index is replaced (or created), then the old parts are deleted. The
// caller holds the whole-state lock.
func (b *Backend) Replace(s *state.State) error {
	if s == nil || s.Lineage == "" {
		return errors.New("replace state: the state has no lineage")
	}
	if s.Version > state.FormatVersion {
		return fmt.Errorf("replace state: the state has format version %d, this trialform writes %d", s.Version, state.FormatVersion)
	}
	ctx, cancel := background()
	defer cancel()
	b.mu.Lock()
	defer b.mu.Unlock()
	// Never under a lock someone released with force-unlock: someone
	// else may hold the state now.
	if err := b.checkHeld(ctx, "replace state"); err != nil {
		return err
	}
	cur, rv, err := b.readIndex(ctx)
	var ce *state.CorruptError
	if errors.As(err, &ce) {
		// An index that cannot be read is replaced all the same (state
		// push -force repairs it); the parts it named are left behind.
		meta, merr := b.c.getSecretMeta(ctx, b.indexName())
		if merr != nil {
			return fmt.Errorf("replace state: %w", merr)
		}
		cur, rv, err = nil, meta.ResourceVersion, nil
	}
	if err != nil {
		return err
	}
	ch := &change{lineage: s.Lineage, version: state.FormatVersion, exps: map[string]*encodedExp{},
		base: &index{Layout: layoutVersion, Version: state.FormatVersion, Lineage: s.Lineage, Experiments: map[string]*expEntry{}}}
	for n, e := range s.Experiments {
		enc, err := encodeExp(e, nil, nil, false)
		if err != nil {
			return fmt.Errorf("replace state: experiment %q: %w", n, err)
		}
		ch.exps[n] = enc
	}
	// The new index's serial is s's: commit writes base's + 1.
	if s.Serial > 0 {
		ch.base.Serial = s.Serial - 1
	}
	ch.baseRV = rv
	ch.replace = true
	serial, err := b.commit(ctx, ch)
	if err != nil {
		return fmt.Errorf("replace state: %w", err)
	}
	s.Serial = serial
	if cur != nil {
		b.deleteReplaced(ctx, cur, b.cache.idx)
	}
	s.Version = state.FormatVersion
	b.loaded = b.cache.idx
	return nil
}
