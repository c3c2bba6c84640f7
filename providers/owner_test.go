package providers

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestParamsDigestSurvivesJSON(t *testing.T) {
	p := map[string]any{"layers": 4, "lr": 0.000674851, "opt": "adam", "big": 1e300}
	b, _ := json.Marshal(p)
	var back map[string]any
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if ParamsDigest(p) != ParamsDigest(back) || ParamsDigest(p) == "" {
		t.Errorf("digest %q after a JSON round trip %q", ParamsDigest(p), ParamsDigest(back))
	}
	back["layers"] = 5.0
	if ParamsDigest(p) == ParamsDigest(back) {
		t.Error("other params give the same digest")
	}
}

func TestCheckOwner(t *testing.T) {
	req := StartRequest{Experiment: "e", TrialID: "t0001", Lineage: "L", ExperimentID: "id1", Generation: 2, Params: map[string]any{"x": 1}}
	for _, tc := range []struct {
		found Owner
		want  string // "" = adopted
	}{
		{req.Owner(), ""},
		{Owner{}, ""}, // an object from before the marker
		{Owner{Lineage: "L"}, ""},
		{Owner{Lineage: "M"}, "another trialform state (lineage M)"},
		{Owner{Lineage: "L", ExperimentID: "id0"}, "another instance of the experiment (id id0"},
		{Owner{Lineage: "L", ExperimentID: "id1", Generation: 1}, "generation 1, not 2"},
		{Owner{Lineage: "L", ParamsDigest: ParamsDigest(map[string]any{"x": 2})}, "other parameters"},
	} {
		err := CheckOwner("trial dir D", req, tc.found)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%+v: %v", tc.found, err)
		case tc.want != "" && (err == nil || !IsPermanent(err) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "`trialform import e t0001`")):
			t.Errorf("%+v: %v, want a permanent error with %q naming import", tc.found, err, tc.want)
		}
	}
}
