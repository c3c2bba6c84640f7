package remote

import (
	"strings"
	"testing"

	"github.com/trialform/trialform/providers"
)

// A handle that names a machine the platform block does not list is
// foreign (state push refuses it: a Read would find the trial on none of
// the listed machines, and a resume would run it a second time); one of
// a listed machine, or without a machine, is not. Nothing is contacted.
func TestForeignMachine(t *testing.T) {
	r, err := New(Config{Machines: []Machine{{Host: "10.0.0.5"}, {Host: "10.0.0.6", Port: 2222}}})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for _, h := range []providers.Handle{{"machine": "10.0.0.5:22"}, {"machine": "10.0.0.6:2222"}, {}} {
		if why := r.Foreign(h); why != "" {
			t.Errorf("Foreign(%v) = %q, want none", h, why)
		}
	}
	why := r.Foreign(providers.Handle{"machine": "10.0.0.7:22", "dir": "/x"})
	if !strings.Contains(why, "machine 10.0.0.7:22, which the platform block does not list (it lists 10.0.0.5:22, 10.0.0.6:2222)") {
		t.Errorf("Foreign of another machine = %q", why)
	}
}
