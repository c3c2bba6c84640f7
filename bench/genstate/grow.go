package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"sync"

	"github.com/trialform/trialform/internal/topdir"
	"github.com/trialform/trialform/plan"
	"github.com/trialform/trialform/providers/platforms"
	"github.com/trialform/trialform/schema"
	"github.com/trialform/trialform/state"
	"github.com/trialform/trialform/tuner"
)

// grow copies the real apply in src to dst with n trials: dst's main.hcl
// is src's with max_trials = n, and trial i is real trial i mod m (m
// trials in src) under id plan.TrialID(i): its state record, its trial
// directory (every file, the id in them replaced), its metric series and
// its TensorBoard directory.
func grow(src, dst string, n int) error {
	hcl, err := os.ReadFile(filepath.Join(src, "main.hcl"))
	if err != nil {
		return err
	}
	maxRe := regexp.MustCompile(`max_trials\s*=\s*\d+`)
	if !maxRe.Match(hcl) {
		return fmt.Errorf("%s/main.hcl sets no max_trials", src)
	}
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	hcl = maxRe.ReplaceAll(hcl, []byte("max_trials = "+strconv.Itoa(n)))
	if err := os.WriteFile(filepath.Join(dst, "main.hcl"), hcl, 0o644); err != nil {
		return err
	}
	sm := state.NewManager(filepath.Join(src, ".trialform"))
	st, err := sm.Load()
	if err != nil {
		return err
	}
	if len(st.Experiments) != 1 {
		return fmt.Errorf("%s holds %d experiments, want 1", src, len(st.Experiments))
	}
	var e *state.Experiment
	for _, x := range st.Experiments {
		e = x
	}
	real := e.SortedTrials()
	if len(real) == 0 {
		return fmt.Errorf("%s holds no trials", src)
	}
	for _, t := range real {
		if !state.Terminal(t.Status) {
			return fmt.Errorf("%s: trial %s is %s; grow a finished apply", src, t.ID, t.Status)
		}
	}
	// Everything but the state and the per-trial files, as it is.
	srcTF, dstTF := filepath.Join(src, ".trialform"), filepath.Join(dst, ".trialform")
	absSrc, err := filepath.Abs(src)
	if err != nil {
		return err
	}
	absDst, err := filepath.Abs(dst)
	if err != nil {
		return err
	}
	if err := copyTree(filepath.Join(srcTF, "lib"), filepath.Join(dstTF, "lib"), nil); err != nil {
		return err
	}
	// Marked as trialform marks them (see internal/topdir): new trial
	// directories spread over quiet block groups.
	for _, d := range []string{dstTF, filepath.Join(dstTF, "trials"), filepath.Join(dstTF, "trials", e.Name), filepath.Join(dstTF, "tensorboard"), filepath.Join(dstTF, "tensorboard", e.Name)} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
		topdir.Mark(d)
	}
	trials := map[string]*state.Trial{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	errc := make(chan error, 1)
	sem := make(chan struct{}, 8)
	for i := 0; i < n; i++ {
		t := real[i%len(real)]
		id := plan.TrialID(i)
		c := *t
		c.ID, c.Seq, c.ParameterID = id, i, i
		c.Handle = map[string]string{}
		for k, v := range t.Handle {
			c.Handle[k] = string(rename([]byte(v), t.ID, id, absSrc, absDst))
		}
		mu.Lock()
		trials[id] = &c
		mu.Unlock()
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if err := copyTrial(srcTF, dstTF, e.Name, t.ID, id, absSrc, absDst); err != nil {
				select {
				case errc <- err:
				default:
				}
			}
		}()
	}
	wg.Wait()
	select {
	case err := <-errc:
		return err
	default:
	}
	// The configuration's directory is the trials' code directory, part
	// of what defines a generation: hash the moved one as apply would.
	cfg, diags := schema.Load(dst, schema.LoadOptions{Platforms: platforms.Registry(), Tuners: tuner.Builtin()})
	if diags.HasErrors() {
		return fmt.Errorf("%s/main.hcl: %v", dst, diags)
	}
	ce := cfg.Experiments[e.Name]
	if ce == nil {
		return fmt.Errorf("%s/main.hcl has no experiment %q", dst, e.Name)
	}
	oldHash := e.SpecHash
	e.SpecHash, e.PartHashes = plan.SpecHash(ce), plan.PartHashes(ce)
	for _, t := range trials {
		if t.SpecHash == oldHash {
			t.SpecHash = e.SpecHash
		}
	}
	e.Trials = trials
	e.MaxTrials = n
	e.NextSeq = n
	if err := state.NewManager(dstTF).Save(st); err != nil {
		return err
	}
	return nil
}

// copyTrial copies real trial from's files to trial to's.
func copyTrial(srcTF, dstTF, exp, from, to, absSrc, absDst string) error {
	ren := func(b []byte) []byte { return rename(b, from, to, absSrc, absDst) }
	for _, sub := range []string{"trials", "tensorboard"} {
		d := filepath.Join(srcTF, sub, exp, from)
		if _, err := os.Stat(d); err != nil {
			continue
		}
		if err := copyTree(d, filepath.Join(dstTF, sub, exp, to), ren); err != nil {
			return err
		}
	}
	// The series, through the backend contract (its points name no trial).
	pts, err := state.NewManager(srcTF).ReadMetrics(exp, from)
	if err != nil || len(pts) == 0 {
		return err
	}
	return state.NewManager(dstTF).AppendMetrics(exp, to, pts)
}

// rename replaces the trial id (as a JSON string and as a path element)
// and the configuration's directory in b.
func rename(b []byte, from, to, srcDir, dstDir string) []byte {
	b = bytes.ReplaceAll(b, []byte(srcDir+"/"), []byte(dstDir+"/"))
	b = bytes.ReplaceAll(b, []byte(`"`+srcDir+`"`), []byte(`"`+dstDir+`"`))
	b = bytes.ReplaceAll(b, []byte(`"`+from+`"`), []byte(`"`+to+`"`))
	b = bytes.ReplaceAll(b, []byte("/"+from+"/"), []byte("/"+to+"/"))
	if bytes.HasSuffix(b, []byte("/"+from)) {
		b = append(b[:len(b)-len(from)], to...)
	}
	b = bytes.ReplaceAll(b, []byte("/"+from+`"`), []byte("/"+to+`"`))
	return b
}

// copyTree copies the regular files and directories under from to to,
// each file's content through ren (nil: as it is), keeping modes.
func copyTree(from, to string, ren func([]byte) []byte) error {
	ents, err := os.ReadDir(from)
	if err != nil {
		return err
	}
	fi, err := os.Stat(from)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(to, fi.Mode().Perm()); err != nil {
		return err
	}
	sort.Slice(ents, func(i, j int) bool { return ents[i].Name() < ents[j].Name() })
	for _, d := range ents {
		f, t := filepath.Join(from, d.Name()), filepath.Join(to, d.Name())
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			if err := copyTree(f, t, ren); err != nil {
				return err
			}
		case info.Mode().IsRegular():
			b, err := os.ReadFile(f)
			if err != nil {
				return err
			}
			if ren != nil {
				b = ren(b)
			}
			if err := os.WriteFile(t, b, info.Mode().Perm()); err != nil {
				return err
			}
		}
	}
	return nil
}
