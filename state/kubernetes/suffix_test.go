package k8sstate

import (
	"regexp"
	"strings"
	"testing"
)

// validSuffix accepts and refuses what the regexp it replaced did, on the
// boundary cases and on every string of up to 3 bytes over a small
// alphabet.
func TestValidSuffixAsTheRegexp(t *testing.T) {
	re := regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,38}[a-z0-9])?$`)
	cases := []string{"", "a", "default", "a-b", "-a", "a-", "A", "a_b", "a.b", "é",
		strings.Repeat("a", 40), strings.Repeat("a", 41), "a" + strings.Repeat("-", 38) + "a", "a" + strings.Repeat("-", 39) + "a"}
	alphabet := []string{"a", "Z", "0", "-", "_", "."}
	for _, x := range alphabet {
		cases = append(cases, x)
		for _, y := range alphabet {
			cases = append(cases, x+y)
			for _, z := range alphabet {
				cases = append(cases, x+y+z)
			}
		}
	}
	for _, c := range cases {
		if got, want := validSuffix(c), re.MatchString(c); got != want {
			t.Errorf("validSuffix(%q) = %v, the regexp says %v", c, got, want)
		}
	}
	if !validSuffix(strings.Repeat("a", 40)) || validSuffix(strings.Repeat("a", 41)) {
		t.Error("the bound is 40 bytes")
	}
}
