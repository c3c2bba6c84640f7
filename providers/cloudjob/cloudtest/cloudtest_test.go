package cloudtest

import "testing"

func TestStateNames(t *testing.T) {
	n := StateNames{Unknown: "U", Waiting: "W", Running: "R", Stopping: "S", Succeeded: "OK", Failed: "F", Stopped: "X"}
	for _, c := range []struct {
		st              State
		known, stopping bool
		want            string
	}{
		{Running, false, false, "U"},
		{Waiting, true, false, "W"},
		{Running, true, false, "R"},
		{Running, true, true, "S"},
		{Succeeded, true, true, "OK"},
		{Failed, true, false, "F"},
		{Stopped, true, true, "X"},
	} {
		if got := n.Name(Status{State: c.st}, c.known, c.stopping); got != c.want {
			t.Errorf("Name(%s, known=%v, stopping=%v) = %q, want %q", c.st, c.known, c.stopping, got, c.want)
		}
	}
}
