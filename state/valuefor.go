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

// Retaken is a trial's value of an objective other than the one its
// Value was taken for (an earlier generation's trial, after the objective
// was renamed or its strategy changed), taken again from its series by
// apply so that neither the next plan nor the views read the series
// again. Value is nil when the series has none (it never reported the
// metric, or the series cannot tell).
type Retaken struct {
	ValueFor
	Value *float64 `json:"value"`
}

// ValueOf is t's value of objective as the state knows it: its Value
// when that was taken for objective (ValueIsFor), else its Retaken value
// when that was; known is false when the state cannot tell (the series
// can).
func (t *Trial) ValueOf(objective ValueFor, gen int) (v *float64, known bool) {
	if t.ValueIsFor(objective, gen) {
		return t.Value, true
	}
	if r := t.Retaken; r != nil && r.ValueFor == objective {
		return r.Value, true
	}
	return nil, false
}

func (r *Retaken) clone() *Retaken {
	if r == nil {
		return nil
	}
	c := *r
	c.Value = clonePtr(r.Value)
	return &c
}

func (r *Retaken) equal(o *Retaken) bool {
	if r == nil || o == nil {
		return r == o
	}
	return r.ValueFor == o.ValueFor && floatPtrEqual(r.Value, o.Value)
}
