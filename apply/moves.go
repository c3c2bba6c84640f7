package apply

import (
	"fmt"

	"github.com/trialform/trialform/plan"
	"github.com/trialform/trialform/state"
)

// MetricsMover is the optional part of a StateStore that renames an
// experiment's metric series (state.Manager has it).
type MetricsMover interface {
	MoveMetrics(from, to string) error
}

// move makes the configuration's moved blocks in the state: each
// experiment still recorded under a block's From takes the name To,
// keeping its id, trials, results and platform identity. Its metric
// series are renamed first, then the state is saved (a crash between the
// two is finished by the next run: MoveMetrics of what moved already does
// nothing). A block whose From is not in the state moved already (or never
// existed: a warning when To is not in the state either). Both in the
// state is an error naming the block.
func (s *Session) move() ([]plan.Move, []string, error) {
	if len(s.Config.Moved) == 0 {
		return nil, nil, nil
	}
	st := s.State()
	var moves []plan.Move
	var warnings []string
	for _, m := range s.Config.Moved {
		from, to := st.Experiments[m.From], st.Experiments[m.To]
		switch {
		case from != nil && to != nil:
			return nil, nil, fmt.Errorf("%s: moved block: cannot move experiment.%s to experiment.%s: both are in the state. Remove the moved block, or drop one of them from the state first (`trialform destroy -target=experiment.%s`, or `trialform state rm experiment.%s`)",
				m.Pos(), m.From, m.To, m.From, m.From)
		case from == nil && to == nil:
			warnings = append(warnings, fmt.Sprintf("%s: moved block: experiment.%s is not in the state, so nothing moves to experiment.%s (check the name; once every copy of the state has applied the move, the block can go)", m.Pos(), m.From, m.To))
			continue
		case from == nil:
			continue // moved already
		}
		if err := st.Move(m.From, m.To); err != nil {
			return nil, nil, fmt.Errorf("%s: moved block: %w", m.Pos(), err)
		}
		moves = append(moves, plan.Move{From: m.From, To: m.To, Pos: m.Pos()})
	}
	if len(moves) == 0 {
		return nil, warnings, nil
	}
	if mm, ok := s.Store.(MetricsMover); ok {
		for _, mv := range moves {
			if err := mm.MoveMetrics(mv.From, mv.To); err != nil {
				return nil, nil, err
			}
		}
	}
	err := s.change(func(cur *state.State) {
		for _, mv := range moves {
			_ = cur.Move(mv.From, mv.To) // checked on the copy above
		}
	})
	if err != nil {
		return nil, nil, err
	}
	return moves, warnings, nil
}
