package command

import (
	"fmt"
	"strings"

	"github.com/trialform/trialform/internal/gitinfo"
	"github.com/trialform/trialform/plan"
	"github.com/trialform/trialform/schema"
	"github.com/trialform/trialform/state"
)

// provenance reads, from git, what each experiment of cfg is defined and
// run from: the commit of the definitions' directory and of its
// code_dir, and whether either has uncommitted changes (the state
// directory sd left out). A directory outside a repository records no
// commit; a repository that cannot be read is a warning, and its trials
// record no commit either.
type provenance struct {
	byExp map[string]state.Provenance
	// defs and code are what gitinfo found, by experiment.
	defs, code map[string]gitinfo.Info
}

func (g *Globals) readProvenance(cfg *schema.Config, sd string) *provenance {
	pv := &provenance{byExp: map[string]state.Provenance{}, defs: map[string]gitinfo.Info{}, code: map[string]gitinfo.Info{}}
	if cfg == nil {
		return pv
	}
	seen := map[string]gitinfo.Info{}
	describe := func(dir string) gitinfo.Info {
		if info, ok := seen[dir]; ok {
			return info
		}
		info, err := gitinfo.Describe(dir, sd)
		if err != nil {
			g.warnf("%v; trials created now record no git commit", err)
		}
		seen[dir] = info
		return info
	}
	for name, e := range cfg.Experiments {
		defs := describe(cfg.Dir)
		code := defs
		if e.Trial.CodeDir != "" && e.Trial.CodeDir != cfg.Dir {
			code = describe(e.Trial.CodeDir)
		}
		pv.defs[name], pv.code[name] = defs, code
		pv.byExp[name] = state.Provenance{
			Commit: defs.Commit, Dirty: defs.Dirty(),
			CodeCommit: code.Commit, CodeDirty: code.Dirty(),
			Version: Version,
		}
	}
	return pv
}

// note adds to each experiment of p that creates trials a note when its
// definitions or code_dir have uncommitted changes: apply records the
// commit with a dirty flag, which does not say what the change was.
func (pv *provenance) note(p *plan.Plan) {
	for _, ep := range p.Experiments {
		defs, ok := pv.defs[ep.Name]
		if !ok {
			continue
		}
		if defs.Dirty() {
			ep.Notes = append(ep.Notes, uncommittedNote("the definitions", defs))
		}
		if code := pv.code[ep.Name]; code.Dirty() && code.Root+strings.Join(code.Changed, ",") != defs.Root+strings.Join(defs.Changed, ",") {
			ep.Notes = append(ep.Notes, uncommittedNote("its code_dir", code))
		}
	}
}

func uncommittedNote(what string, info gitinfo.Info) string {
	files := info.Changed
	more := ""
	if len(files) > 3 {
		more = fmt.Sprintf(" and %d more", len(files)-3)
		files = files[:3]
	}
	return fmt.Sprintf("%s have uncommitted changes (%s%s); trials created now record commit %s, so commit first to know what they ran",
		what, strings.Join(files, ", "), more, info.Short())
}
