package cloudjob

import (
	"strings"
	"testing"
)

// The names the shared storage accepts (checkNames; its regexp compiles
// on first use): bounds and refusals.
func TestCheckNamesBounds(t *testing.T) {
	for name, ok := range map[string]bool{
		"mnist": true, "t00001": true, "a.b_c-d": true, "0x": true,
		strings.Repeat("a", 200): true, strings.Repeat("a", 201): false,
		"": false, ".hidden": false, "-x": false, "_x": false, "a/b": false, "a..b": false, "a b": false, "é": false,
	} {
		if err := checkNames(name, "t1"); (err == nil) != ok {
			t.Errorf("checkNames(%q): %v, want accepted %v", name, err, ok)
		}
		if err := checkNames("e", name); (err == nil) != ok {
			t.Errorf("checkNames(trial %q): %v, want accepted %v", name, err, ok)
		}
	}
}
