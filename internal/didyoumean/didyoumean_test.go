package didyoumean

import "testing"

func TestSuggest(t *testing.T) {
	cands := []string{"startup_trials", "candidates", "seed", "max_failed_trials", "apply", "plan"}
	for _, tc := range []struct{ given, want string }{
		{"startup_trails", "startup_trials"}, // a transposition: 2 edits
		{"aply", "apply"},
		{"Seed", "seed"},                          // case is ignored
		{"max_failed_trail", "max_failed_trials"}, // 3 edits, a long name
		{"sed", "seed"},
		{"colour", ""}, // nothing close
		{"xyz", ""},
		{"", ""},
	} {
		if got := Suggest(tc.given, cands); got != tc.want {
			t.Errorf("Suggest(%q) = %q, want %q", tc.given, got, tc.want)
		}
	}
	if got := Sentence("aply", cands, "%q"); got != ` Did you mean "apply"?` {
		t.Errorf("Sentence = %q", got)
	}
	if got := Sentence("zzz", cands, "%q"); got != "" {
		t.Errorf("Sentence with nothing close = %q", got)
	}
}
