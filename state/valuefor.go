package state

// ValueFor names the objective a trial's Value was taken for.
type ValueFor struct {
	// Metric is the objective's key ("default" when the configuration
	// names none).
	Metric string `json:"metric"`
	// Strategy is the objective's strategy: "" (its final result),
	// "min", "max" or "latest".
	Strategy string `json:"strategy,omitempty"`
}

// ObjectiveFor is the ValueFor of an objective with metric (""
// = "default") and strategy ("" or "final" = its final result).
func ObjectiveFor(metric, strategy string) ValueFor {
	if strategy == "final" {
		strategy = ""
	}
	return ValueFor{Metric: orDefault(metric, "default"), Strategy: strategy}
}

// ValueIsFor reports whether t.Value is its value of objective as it is:
// its recorded ValueFor is objective. A trial without one (a state
// written before it was recorded) is for the objective of its
// generation, which is gen's when t ran in generation gen (an objective
// changed starts a generation), and unknown otherwise.
func (t *Trial) ValueIsFor(objective ValueFor, gen int) bool {
	if t.ValueFor != nil {
		return *t.ValueFor == objective
	}
	return t.Generation == gen
}
