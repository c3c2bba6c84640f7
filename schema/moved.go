package schema

import (
	"fmt"
	"strings"

	"github.com/hashicorp/hcl/v2"

	"github.com/trialform/trialform/internal/didyoumean"
)

// Moved is a moved block: the experiment recorded in the state as From is
// now declared as To (a rename that keeps its trials and results). Chains
// (a → b, b → c) are resolved: To is the final, declared name.
type Moved struct {
	From, To  string // experiment names
	DeclRange hcl.Range
}

// Pos is "file:line" of the block, for messages.
func (m *Moved) Pos() string { return posString(m.DeclRange) }

var movedSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{{Name: "from", Required: true}, {Name: "to", Required: true}},
}

// decodeMoved checks the moved blocks: both ends are experiment addresses,
// a name is moved from once, the moves form no cycle, the final target is
// declared and the source is not.
func (l *loader) decodeMoved(blocks []*hcl.Block) {
	edges := map[string]moveEdge{}
	var order []string
	for _, b := range blocks {
		content, diags := bodyContent(b.Body, movedSchema)
		l.diags = append(l.diags, diags...)
		if diags.HasErrors() {
			continue
		}
		from, ok1 := l.experimentAddr(content.Attributes["from"])
		to, ok2 := l.experimentAddr(content.Attributes["to"])
		if !ok1 || !ok2 {
			continue
		}
		if from == to {
			l.errorf(b.DefRange.Ptr(), "Invalid moved block", "from and to are both experiment.%s; a moved block renames an experiment: name the old and the new name.", from)
			continue
		}
		if prev, dup := edges[from]; dup {
			l.errorf(b.DefRange.Ptr(), "Ambiguous move", "experiment.%s is moved twice: to experiment.%s here and to experiment.%s at %s. Keep one of the blocks.", from, to, prev.to, posString(prev.blk.DefRange))
			continue
		}
		edges[from] = moveEdge{to, b}
		order = append(order, from)
	}
	targets := map[string]string{} // final target -> first source, for duplicates
	inCycle := map[string]bool{}
	for _, from := range order {
		e := edges[from]
		// Follow the chain to its end, refusing cycles.
		seen := map[string]bool{from: true}
		path := []string{from}
		cur := e.to
		cycle := false
		for {
			path = append(path, cur)
			if seen[cur] {
				cycle = true
				break
			}
			seen[cur] = true
			next, ok := edges[cur]
			if !ok {
				break
			}
			cur = next.to
		}
		if cycle {
			if inCycle[from] {
				continue // reported with the block that found it
			}
			for _, n := range path {
				inCycle[n] = true
			}
			l.errorf(e.blk.DefRange.Ptr(), "Cycle in moved blocks", "The moved blocks form a cycle: experiment.%s. Remove one of the blocks so every chain ends at a declared experiment.", strings.Join(path, " → experiment."))
			continue
		}
		if decl, ok := l.expDecls[from]; ok {
			// Name where the chain ends (a → b → c: c), not the next link.
			moved, end := "experiment."+e.to+",", "its target"
			if cur != e.to {
				moved, end = fmt.Sprintf("experiment.%s, and on to experiment.%s,", e.to, cur), "where the chain of moved blocks ends"
			}
			if target, ok := l.expDecls[cur]; ok {
				l.errorf(e.blk.DefRange.Ptr(), "Moved from a declared experiment",
					"experiment.%s is moved to %s but experiment %q is still declared at %s, and experiment %q, %s, at %s. Remove the block of %q (its trials and results are experiment.%s's), give it another name for a new experiment, or remove the moved block.",
					from, moved, from, posString(decl.DefRange), cur, end, posString(target.DefRange), from, cur)
			} else {
				l.errorf(e.blk.DefRange.Ptr(), "Moved from a declared experiment",
					"experiment.%s is moved to %s but experiment %q is still declared at %s. A moved block renames an experiment: rename its block to %q, %s, or remove the moved block.",
					from, moved, from, posString(decl.DefRange), cur, end)
			}
			continue
		}
		if _, ok := l.expDecls[cur]; !ok {
			l.errorf(e.blk.DefRange.Ptr(), "Moved to an undeclared experiment",
				"experiment.%s is moved to experiment.%s, which is not declared in the configuration.%s Declare experiment %q (the renamed block), or fix the moved block.",
				from, cur, didyoumean.Sentence(cur, l.expNames, "experiment.%s"), cur)
			continue
		}
		if other, dup := targets[cur]; dup && !onChain(edges, other, from) && !onChain(edges, from, other) {
			l.errorf(e.blk.DefRange.Ptr(), "Ambiguous move",
				"experiment.%s and experiment.%s are both moved to experiment.%s; only one experiment can take a name. Remove one of the moved blocks.", other, from, cur)
			continue
		}
		if _, dup := targets[cur]; !dup {
			targets[cur] = from
		}
		l.cfg.Moved = append(l.cfg.Moved, &Moved{From: from, To: cur, DeclRange: e.blk.DefRange})
	}
}

// experimentAddr reads an "experiment.NAME" address.
func (l *loader) experimentAddr(a *hcl.Attribute) (string, bool) {
	if a == nil {
		return "", false
	}
	tr, diags := hcl.AbsTraversalForExpr(a.Expr)
	if !diags.HasErrors() && len(tr) == 2 && tr.RootName() == "experiment" {
		if at, ok := tr[1].(hcl.TraverseAttr); ok {
			return at.Name, true
		}
	}
	l.errorf(a.Expr.Range().Ptr(), "Invalid experiment address",
		"%s must be an experiment address such as experiment.old (no quotes).", a.Name)
	return "", false
}

type moveEdge struct {
	to  string
	blk *hcl.Block
}

// onChain reports whether following the moves from a reaches b.
func onChain(edges map[string]moveEdge, a, b string) bool {
	cur := a
	for range len(edges) + 1 {
		e, ok := edges[cur]
		if !ok {
			return false
		}
		if e.to == b {
			return true
		}
		cur = e.to
	}
	return false
}
