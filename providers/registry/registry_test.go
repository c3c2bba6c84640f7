package registry

import (
	"strings"
	"testing"

	"github.com/trialform/trialform/providers"
)

type sample struct {
	Name  string `hcl:"name,attr" doc:"the name"`
	Count int    `hcl:"count,optional" min:"1" doc:"how many"`
}

func TestRegistry(t *testing.T) {
	built := ""
	r := New(
		Kind{Name: "a", Config: func() any { return &sample{Count: 1} }, New: func(cfg any, env Env) (providers.Provider, error) {
			built = cfg.(*sample).Name + "/" + env.Name
			return nil, nil
		}},
		Kind{Name: "later"},
	)
	if got := strings.Join(r.Names(), ","); got != "a,later" {
		t.Errorf("names %s", got)
	}
	if got := strings.Join(r.ImplementedNames(), ","); got != "a" {
		t.Errorf("implemented %s", got)
	}
	if _, err := r.Build("a", &sample{Name: "n"}, Env{Name: "lab"}); err != nil || built != "n/lab" {
		t.Errorf("Build: %v, built %q", err, built)
	}
	if _, err := r.Build("a", nil, Env{Name: "d"}); err != nil || built != "/d" {
		t.Errorf("Build with the defaults: %v, built %q", err, built)
	}
	if _, err := r.Build("later", nil, Env{}); err == nil || !strings.Contains(err.Error(), `"later" is not implemented yet`) || !providers.IsPermanent(err) {
		t.Errorf("Build of a kind not implemented: %v", err)
	}
	if _, err := r.Build("nope", nil, Env{}); err == nil || !strings.Contains(err.Error(), "known kinds: a, later") {
		t.Errorf("Build of an unknown kind: %v", err)
	}
	defer func() {
		if recover() == nil {
			t.Error("a kind registered twice did not panic")
		}
	}()
	New(Kind{Name: "a"}, Kind{Name: "a"})
}
