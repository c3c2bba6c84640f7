// Package layout holds only a test: it checks, with `go list`, the import
// rules CONTRIBUTING.md's Layout section states.
package layout

import (
	"os/exec"
	"sort"
	"strings"
	"testing"
)

const module = "github.com/trialform/trialform/"

// platformPackage is the platform a package belongs to ("local" for
// providers/local, "kubernetes" for providers/kubernetes/crds), or "" when
// it is no platform's: the contract (providers), the shared packages
// (registry, trialproto, conformance, codedir: how a code dir is shipped,
// cloudjob: the base of the cloud job platforms) and the list (platforms).
func platformPackage(p string) string {
	rest, ok := strings.CutPrefix(p, "providers/")
	if !ok {
		return ""
	}
	name, _, _ := strings.Cut(rest, "/")
	switch name {
	case "registry", "trialproto", "conformance", "codedir", "cloudjob", "platforms":
		return ""
	}
	return name
}

func under(p string, roots ...string) bool {
	for _, r := range roots {
		if p == r || strings.HasPrefix(p, r+"/") {
			return true
		}
	}
	return false
}

// violations checks each package's dependencies (the module's own
// packages, by module-relative import path, transitively) against the
// rules; it returns one line per broken rule.
func violations(deps map[string][]string) []string {
	var out []string
	bad := func(p, d, rule string) { out = append(out, p+" imports "+d+": "+rule) }
	for p, ds := range deps {
		for _, d := range ds {
			switch {
			case under(d, "cmd"):
				bad(p, d, "nothing imports cmd/")
			case under(d, "internal/command") && !under(p, "cmd"):
				bad(p, d, "only cmd/ imports internal/command")
			}
			switch {
			case under(p, "tuner"):
				if !under(d, "tuner", "internal/decl", "internal/didyoumean") {
					bad(p, d, "tuner is pure: it imports none of trialform's other packages but the settings decoder (internal/decl)")
				}
			case under(p, "internal/decl", "internal/didyoumean"):
				if !under(d, "internal/didyoumean") {
					bad(p, d, "the settings decoder and did-you-mean are leaves: they import no other trialform package")
				}
			case p == "schema":
				if under(d, "plan", "apply", "state", "internal/views") || platformPackage(d) != "" || d == "providers/platforms" {
					bad(p, d, "schema never touches a platform, the state, plan or apply (it may import providers and providers/registry)")
				}
			case p == "state":
				if under(d, "schema", "plan", "apply", "providers", "internal/views") {
					bad(p, d, "state imports no schema, plan, apply or provider")
				}
			case under(p, "providers"):
				if under(d, "schema", "plan", "apply", "state", "internal/views") {
					bad(p, d, "providers never import schema, state, plan or apply")
				}
				if pp, dp := platformPackage(p), platformPackage(d); dp != "" && pp != "" && pp != dp {
					bad(p, d, "a platform package never imports another platform's")
				}
				if platformPackage(p) == "" && p != "providers/platforms" && platformPackage(d) != "" {
					bad(p, d, "only providers/platforms imports the platform packages")
				}
			case p == "plan":
				if under(d, "apply", "internal/views") || platformPackage(d) != "" {
					bad(p, d, "plan never imports apply, views or a platform package")
				}
			case under(p, "apply"):
				if under(d, "internal/views") || platformPackage(d) != "" {
					bad(p, d, "apply never imports views or a platform package")
				}
			case p == "internal/views":
				if under(d, "apply") || platformPackage(d) != "" {
					bad(p, d, "views format; they import no apply and no platform package")
				}
			}
		}
	}
	sort.Strings(out)
	return out
}

func TestImportRules(t *testing.T) {
	cmd := exec.Command("go", "list", "-f", `{{.ImportPath}}{{"\t"}}{{join .Deps " "}}`, module+"...")
	cmd.Dir = "../.."
	b, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	deps := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		p, ds, _ := strings.Cut(line, "\t")
		p = strings.TrimPrefix(p, module)
		deps[p] = nil
		for _, d := range strings.Fields(ds) {
			if r, ok := strings.CutPrefix(d, module); ok {
				deps[p] = append(deps[p], r)
			}
		}
	}
	if len(deps) < 20 || deps["schema"] == nil {
		t.Fatalf("go list found %d packages; is this the module root?", len(deps))
	}
	for _, v := range violations(deps) {
		t.Error(v)
	}
}

// The rules catch what they are meant to.
func TestImportRulesCatch(t *testing.T) {
	deps := map[string][]string{
		"schema":                    {"providers/registry", "providers/kubernetes"},
		"providers/remote":          {"providers", "providers/local"},
		"providers/local":           {"providers/trialproto"},
		"providers/kubernetes":      {"providers/kubernetes/crds", "plan"},
		"providers/kubernetes/crds": nil,
		"providers/trialproto":      nil,
		"plan":                      {"apply"},
		"tuner":                     {"tuner/space", "state", "internal/decl"},
		"internal/decl":             {"internal/didyoumean", "schema"},
		"tuner/space":               nil,
		"state":                     nil,
		"apply":                     nil,
		"internal/command":          nil,
		"internal/views":            {"internal/command"},
		"providers/registry":        {"providers/local"},
	}
	got := strings.Join(violations(deps), "\n")
	for _, want := range []string{
		"schema imports providers/kubernetes",
		"providers/remote imports providers/local: a platform package never imports another platform's",
		"providers/kubernetes imports plan",
		"plan imports apply",
		"tuner imports state",
		"internal/decl imports schema",
		"internal/views imports internal/command",
		"providers/registry imports providers/local: only providers/platforms",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("violations lack %q:\n%s", want, got)
		}
	}
	for _, ok := range []string{"providers/kubernetes imports providers/kubernetes/crds", "providers/local imports", "tuner imports internal/decl", "internal/decl imports internal/didyoumean"} {
		if strings.Contains(got, ok) {
			t.Errorf("violations wrongly hold %q:\n%s", ok, got)
		}
	}
}
