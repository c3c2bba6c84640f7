package command

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

func runCaptured(args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = Run(context.Background(), args, IO{In: strings.NewReader(""), Out: &out, Err: &errb})
	return code, out.String(), errb.String()
}

// Every command (and state subcommand) answers -h, -help and `help CMD`
// with exit 0 and a help that has a synopsis, a description, the
// positional arguments it takes, its flags and an example.
func TestEveryCommandHasHelp(t *testing.T) {
	names := [][]string{}
	for _, c := range commands() {
		if !c.hidden {
			names = append(names, []string{c.name})
		}
	}
	names = append(names, []string{"state", "list"}, []string{"state", "show"}, []string{"state", "rm"}, []string{"state", "mv"})
	for _, n := range names {
		full := strings.Join(n, " ")
		for _, args := range [][]string{append(append([]string{}, n...), "-h"), append(append([]string{}, n...), "--help"), append([]string{"help"}, n...)} {
			code, out, errs := runCaptured(args...)
			if code != 0 {
				t.Errorf("%q: exit %d, want 0; stderr:\n%s", args, code, errs)
				continue
			}
			if errs != "" {
				t.Errorf("%q: wrote to stderr:\n%s", args, errs)
			}
			h, ok := helps[full]
			if !ok {
				t.Errorf("%s has no help text", full)
				continue
			}
			if h.desc == "" || h.example == "" {
				t.Errorf("%s: help lacks a description or an example", full)
			}
			for _, want := range []string{"Usage: trialform " + full, "Example:", "trialform " + n[0]} {
				if !strings.Contains(out, want) {
					t.Errorf("%q: help lacks %q:\n%s", args, want, out)
				}
			}
			if strings.Contains(h.synopsis, "[options]") && !strings.Contains(out, "Options:") {
				t.Errorf("%q: synopsis says [options] but no Options section:\n%s", args, out)
			}
			if strings.ContainsAny(strings.Fields(h.synopsis)[len(strings.Fields(h.synopsis))-1], "ABCDEFGHIJKLMNOPQRSTUVWXYZ") && !strings.Contains(out, "Arguments:") {
				t.Errorf("%q: takes positional arguments but the help has no Arguments section:\n%s", args, out)
			}
			if strings.Contains(out, "Usage of ") {
				t.Errorf("%q: Go's bare flag usage:\n%s", args, out)
			}
		}
	}
}

// Flag usage text is printed as written: Go's backquote convention made
// `plan -h` show "-out trialform apply FILE".
func TestPlanHelpOutFlag(t *testing.T) {
	_, out, _ := runCaptured("plan", "-h")
	if !strings.Contains(out, "-out=FILE") || strings.Contains(out, "-out trialform") {
		t.Fatalf("plan -h shows the -out flag wrongly:\n%s", out)
	}
}

func TestUnknownFlagHasErrorPrefix(t *testing.T) {
	for _, args := range [][]string{{"plan", "-bogus"}, {"apply", "--nope"}, {"state", "list", "-x"}, {"fmt", "-y"}} {
		code, _, errs := runCaptured(args...)
		if code != 1 || !strings.HasPrefix(errs, "Error: flag provided but not defined") {
			t.Errorf("%q: exit %d, stderr %q; want exit 1 and an Error: line", args, code, errs)
		}
	}
}

// A misspelled flag is answered with the flag meant, and a duration
// without its unit with the form one takes; before, "flag provided but
// not defined: -polcy" and "parse error" alone.
func TestFlagErrorsSayWhatToDo(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"controller", "-repo", "r", "-polcy", "plan-only"}, "Error: flag provided but not defined: -polcy. Did you mean -policy?\n"},
		{[]string{"controller", "--brnch", "main"}, "Error: flag provided but not defined: -brnch. Did you mean -branch?\n"},
		{[]string{"plan", "-tagret", "svm"}, "Error: flag provided but not defined: -tagret. Did you mean -target?\n"},
		{[]string{"plan", "-zzzzzz"}, "Error: flag provided but not defined: -zzzzzz\n"},
		{[]string{"controller", "-repo", "r", "-interval", "10"}, `Error: invalid value "10" for flag -interval: parse error: -interval takes a duration with its unit, such as 30s, 5m or 1h30m` + "\n"},
	} {
		code, _, errs := runCaptured(tt.args...)
		if code != 1 || !strings.HasPrefix(errs, tt.want) {
			t.Errorf("%q: exit %d, stderr %q; want exit 1 and %q", tt.args, code, errs, tt.want)
		}
	}
}

func TestStateWithoutSubcommand(t *testing.T) {
	code, _, errs := runCaptured("state")
	if code != 1 || !strings.Contains(errs, "Usage: trialform state SUBCOMMAND") {
		t.Fatalf("state: exit %d, stderr %q", code, errs)
	}
	code, _, errs = runCaptured("state", "mvv")
	if code != 1 || !strings.Contains(errs, "unknown state subcommand") {
		t.Fatalf("state mvv: exit %d, stderr %q", code, errs)
	}
}

// A misspelt command is a usage error like an unknown flag: the same exit
// code (1), and the closest command in HCL's words ("Did you mean").
func TestMisspeltCommandIsAUsageError(t *testing.T) {
	flagCode, _, _ := runCaptured("plan", "-bogus")
	for _, args := range [][]string{{"aply"}, {"help", "aply"}} {
		code, out, errs := runCaptured(args...)
		if code != flagCode || out != "" || !strings.Contains(errs, `Error: unknown command "aply". Did you mean "apply"?`) {
			t.Errorf("%q: exit %d (an unknown flag: %d), stdout %q, stderr %q", args, code, flagCode, out, errs)
		}
	}
	code, _, errs := runCaptured("state", "mvv")
	if code != flagCode || !strings.Contains(errs, `unknown state subcommand "mvv". Did you mean "mv"?`) {
		t.Errorf("state mvv: exit %d, stderr %q", code, errs)
	}
}
