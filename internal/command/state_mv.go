package command

import (
	"context"
	"fmt"
	"strings"

	"github.com/trialform/trialform/internal/views"
	"github.com/trialform/trialform/state"
)

// stateMv renames an experiment in the state (`state mv experiment.OLD
// experiment.NEW`), under the lock; Save keeps the previous state as the
// backup. The experiment keeps its id, trials, results and, through
// state.Experiment.PlatformName, the name its objects carry on the
// platform, so running trials keep running and stay tracked.
func (g *Globals) stateMv(ctx context.Context, pos []string, lf lockFlags) int {
	const usage = "usage: trialform state mv experiment.OLD experiment.NEW"
	if len(pos) != 2 {
		return g.errorf("%s", usage)
	}
	var names [2]string
	for i, a := range pos {
		exp, trial, err := parseAddress(a)
		if err != nil {
			return g.errorf("%v; %s", err, usage)
		}
		if trial != "" {
			return g.errorf("%s is a trial: state mv renames experiments (trials cannot move between experiments); %s", a, usage)
		}
		if exp == "" || exp == "." || exp == ".." || strings.ContainsAny(exp, "/\\\x00 \t\n") || len(exp) > 200 {
			return g.errorf("%q is not a valid experiment name: use letters, digits, '-' and '_'", exp)
		}
		names[i] = exp
	}
	from, to := names[0], names[1]
	if from == to {
		return g.errorf("experiment.%s is already called %s; nothing to move", from, to)
	}
	_, m, lk, st, ok := g.openLockedState(ctx, nil, "state mv", lf, func(*state.State) []string { return []string{from, to} })
	if !ok {
		return 1
	}
	defer lk.Unlock()
	if err := st.Clone().Move(from, to); err != nil {
		return g.errorf("state mv: %v; nothing was moved", err)
	}
	// Series first: a crash before the save leaves the state as it was and
	// the series under the new name, which the next move finds moved.
	if err := m.MoveMetrics(from, to); err != nil {
		return g.errorf("state mv: %v; nothing was moved", err)
	}
	_ = st.Move(from, to)
	if err := state.SaveWhole(m, st); err != nil {
		if merr := m.MoveMetrics(to, from); merr != nil {
			err = fmt.Errorf("%w (and moving the metric series back failed: %v)", err, merr)
		}
		return g.errorf("save state: %v", err)
	}
	e := st.Experiments[to]
	backup := ""
	if bk, ok := m.(state.BackupLocator); ok {
		backup = bk.BackupPath()
	}
	views.StateMoved(g.IO.Out, from, to, len(e.Trials), backup, e.PlatformName, e.Platform)
	return 0
}
