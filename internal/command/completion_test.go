package command

import (
	"context"
	"flag"
	"slices"
	"strings"
	"testing"
)

// complete runs `trialform __complete WORDS...` in dir and returns the
// candidates.
func complete(t *testing.T, dir string, words ...string) []string {
	t.Helper()
	code, out, errs := runCaptured(append([]string{"-chdir=" + dir, "__complete"}, words...)...)
	if code != 0 {
		t.Fatalf("__complete %q: exit %d\n%s", words, code, errs)
	}
	return strings.Fields(out)
}

// Every command, every state subcommand and every flag of each is
// completable, every flag's fixed values are offered, and every
// positional argument any help names has a completer: completion is
// derived from the command definitions, so a new subcommand, flag or
// argument cannot be left out (state mv, apply -replace=, metrics EXP,
// convert and trials -o were).
func TestEverythingIsCompletable(t *testing.T) {
	dir := t.TempDir()
	top := complete(t, dir, "")
	probe := func(c *command, args ...string) *flag.FlagSet {
		var fs *flag.FlagSet
		g := &Globals{IO: IO{In: strings.NewReader("")}, probe: func(f *flag.FlagSet) { fs = f }}
		c.run(context.Background(), g, args)
		return fs
	}
	checkFlags := func(name string, fs *flag.FlagSet, words ...string) {
		got := complete(t, dir, append(words, "-")...)
		fs.VisitAll(func(f *flag.Flag) {
			want := "-" + f.Name
			if !isBool(f) {
				want += "="
			}
			if !slices.Contains(got, want) {
				t.Errorf("%s: %q is not completed (got %q)", name, want, got)
			}
			if c, ok := f.Value.(*choicesFlag); ok {
				vals := complete(t, dir, append(words, "-"+f.Name, "")...)
				if !slices.Equal(vals, c.choices) {
					t.Errorf("%s -%s VALUE completes %q, want %q", name, f.Name, vals, c.choices)
				}
			}
		})
	}
	for _, c := range commands() {
		if c.hidden {
			continue
		}
		if !slices.Contains(top, c.name) {
			t.Errorf("command %s is not completed", c.name)
		}
		if c.name == "help" {
			continue // its flag set is the command's
		}
		fs := probe(&c)
		if fs == nil {
			t.Errorf("%s: no flag set to complete from", c.name)
			continue
		}
		checkFlags(c.name, fs, c.name)
		subs := complete(t, dir, c.name, "")
		for _, s := range c.subcommands() {
			if !slices.Contains(subs, s) {
				t.Errorf("%s %s is not completed (got %q)", c.name, s, subs)
			}
			sfs := probe(&c, s)
			if sfs == nil || sfs.Name() != c.name+" "+s {
				t.Errorf("%s %s: no flag set of its own", c.name, s)
				continue
			}
			checkFlags(c.name+" "+s, sfs, c.name, s)
		}
	}
	comps := argCompleters()
	for name, h := range helps {
		for _, a := range h.args {
			arg, _, _ := strings.Cut(a, "  ")
			if _, ok := comps[arg]; !ok {
				t.Errorf("help of %s: argument %s has no completer in argCompleters", name, arg)
			}
		}
		if strings.HasPrefix(name, "state ") {
			if _, ok := stateSubcommandSpec(strings.TrimPrefix(name, "state ")); !ok {
				t.Errorf("help of %q: no such state subcommand", name)
			}
		}
	}
	for _, s := range stateSubcommandNames() {
		if _, ok := helps["state "+s]; !ok {
			t.Errorf("state %s has no help", s)
		}
		if !strings.Contains(helps["state"].args[0], s) {
			t.Errorf("state -help does not list %s", s)
		}
	}
	// Values and arguments, where no state is needed.
	for _, c := range []struct {
		words []string
		want  []string
	}{
		{[]string{"convert", ""}, []string{"katib", "nni", "polyaxon"}},
		{[]string{"trials", "-o", ""}, trialsFormats},
		{[]string{"completion", ""}, shells},
		{[]string{"help", "state", ""}, stateSubcommandNames()},
	} {
		if got := complete(t, dir, c.words...); !slices.Equal(got, c.want) {
			t.Errorf("%q completes %q, want %q", c.words, got, c.want)
		}
	}
}
