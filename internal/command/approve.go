package command

import (
	"context"
	"flag"
	"sort"
	"strings"
	"time"

	"github.com/trialform/trialform/internal/didyoumean"
	"github.com/trialform/trialform/internal/views"
	"github.com/trialform/trialform/state"
)

// runApprove lists the changes `trialform controller` holds (no
// arguments), or approves one: it records a state.Approval naming
// exactly the held change, under the experiment's lock, in the state the
// working copy's backend shares with the controller. The controller sees
// it (a change notification, or its next pass) and applies the change.
func runApprove(ctx context.Context, g *Globals, args []string) int {
	fs := flag.NewFlagSet("approve", flag.ContinueOnError)
	var by string
	var lf lockFlags
	fs.StringVar(&by, "by", "", "who approves, recorded with the approval (default USER@HOST)")
	fs.DurationVar(&lf.timeout, "lock-timeout", time.Minute, "wait this long for the experiment's lock (the controller holds it during a pass)")
	noColor := fs.Bool("no-color", false, "no colours")
	rest, code, ok := g.parse(fs, args, argSpec{max: 2, hint: "approve takes EXPERIMENT and optionally the SPEC_HASH of the held change (`trialform approve` lists them)."})
	if !ok {
		return code
	}
	_, m, ok := g.openBackend(nil)
	if !ok {
		return 1
	}
	st := g.loadState(m)
	if st == nil {
		return 1
	}
	now := time.Now()
	if len(rest) == 0 {
		views.HeldChanges(g.IO.Out, st, g.colors(*noColor), now, true)
		return 0
	}
	exp := rest[0]
	if e := st.Experiment(exp); e == nil || e.Hold == nil {
		return g.errorf("%s", notHeld(st, exp))
	}
	if by == "" {
		by = state.Who()
	}
	lk, err := state.LockScope(ctx, m, []string{exp}, "approve", Version, lf.timeout)
	if err != nil {
		return g.errorf("acquire the lock of experiment %s: %v", exp, err)
	}
	defer lk.Unlock()
	if st = g.loadState(m); st == nil {
		return 1
	}
	e := st.Experiment(exp)
	if e == nil || e.Hold == nil {
		// The controller applied or dropped it meanwhile.
		return g.errorf("%s", notHeld(st, exp))
	}
	h := e.Hold
	if len(rest) == 2 && (len(rest[1]) < 6 || !strings.HasPrefix(h.SpecHash, rest[1])) {
		return g.errorf("experiment %s's held change moves to spec %s, not %s: a later commit replaced the change you reviewed; look again (`trialform approve` lists what is held)", exp, h.SpecHash, rest[1])
	}
	if e.Approval.Approves(h.Change) {
		views.Approved(g.IO.Out, exp, h, e.Approval, true)
		return 0
	}
	e.Approval = &state.Approval{Change: h.Change, By: by, At: now.UTC().Truncate(time.Second)}
	if err := m.Save(st); err != nil {
		return g.errorf("record the approval: %v", err)
	}
	views.Approved(g.IO.Out, exp, h, e.Approval, false)
	return 0
}

// notHeld says that exp has no held change, and what is held.
func notHeld(st *state.State, exp string) string {
	var held, all []string
	for name, e := range st.Experiments {
		all = append(all, name)
		if e.Hold != nil {
			held = append(held, name)
		}
	}
	sort.Strings(held)
	sort.Strings(all)
	msg := "experiment " + exp + " has no held change."
	if st.Experiment(exp) == nil {
		cands := held
		if len(cands) == 0 {
			cands = all
		}
		msg = "no experiment " + exp + " in the state." + didyoumean.Sentence(exp, cands, "%s")
	}
	if len(held) == 0 {
		return msg + " The controller holds no change now: nothing to approve."
	}
	return msg + " Held: " + strings.Join(held, ", ") + " (`trialform approve` lists them)."
}
