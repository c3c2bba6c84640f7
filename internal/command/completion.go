package command

import (
	"context"
	"flag"
	"io"
	"sort"
	"strings"

	"github.com/trialform/trialform/internal/views"
	"github.com/trialform/trialform/state"
)

// The shell scripts are thin: each asks the hidden `trialform __complete
// WORD... CURRENT` for the candidates, so commands, flags and names are
// completed from the same definitions the commands parse with.

const bashCompletion = `# bash completion for trialform; load with: source <(trialform completion bash)
_trialform_complete() {
    local line="${COMP_LINE:0:COMP_POINT}"
    local -a words
    read -ra words <<< "$line"
    [[ "$line" =~ [[:space:]]$ ]] && words+=("")
    local cur="${words[${#words[@]}-1]}"
    local IFS=$'\n'
    local -a cands
    cands=($("${words[0]}" __complete "${words[@]:1}" 2>/dev/null))
    # bash splits the current word at '=' (COMP_WORDBREAKS): offer only the part after it.
    if [[ "$cur" == *=* && "$COMP_WORDBREAKS" == *=* ]]; then
        local pre="${cur%=*}="
        cands=("${cands[@]#"$pre"}")
    fi
    COMPREPLY=("${cands[@]}")
}
complete -o default -F _trialform_complete trialform
`

const zshCompletion = `#compdef trialform
# zsh completion for trialform; load with: source <(trialform completion zsh)
# (after compinit), or save it as _trialform in a directory of $fpath.
_trialform() {
  local -a cands
  cands=("${(@f)$(${words[1]} __complete "${(@)words[2,CURRENT]}" 2>/dev/null)}")
  cands=(${cands:#})
  if (( ${#cands} == 0 )); then
    _files
    return
  fi
  compadd -Q -- "${cands[@]}"
}
if (( $+functions[compdef] )); then
  compdef _trialform trialform
fi
`

const fishCompletion = `# fish completion for trialform; save as ~/.config/fish/completions/trialform.fish
function __trialform_complete
    set -l tokens (commandline -opc)
    set -l cur (commandline -ct)
    $tokens[1] __complete $tokens[2..-1] "$cur" 2>/dev/null
end
complete -c trialform -a '(__trialform_complete)'
`

func runCompletion(ctx context.Context, g *Globals, args []string) int {
	fs := flag.NewFlagSet("completion", flag.ContinueOnError)
	pos, code, ok := g.parse(fs, args, argSpec{min: 1, max: 1, hint: "completion takes the shell: bash, zsh or fish."})
	if !ok {
		return code
	}
	switch pos[0] {
	case shells[0]:
		views.Text(g.IO.Out, bashCompletion)
	case shells[1]:
		views.Text(g.IO.Out, zshCompletion)
	case shells[2]:
		views.Text(g.IO.Out, fishCompletion)
	default:
		return g.errorf("completion: unknown shell %q: use bash, zsh or fish", pos[0])
	}
	return 0
}

// runComplete prints the candidates for the last word of args (the word
// being completed; the others are the words before it), one a line.
func runComplete(ctx context.Context, g *Globals, args []string) int {
	if len(args) == 0 {
		args = []string{""}
	}
	words, cur := args[:len(args)-1], args[len(args)-1]
	q := &Globals{IO: IO{In: strings.NewReader(""), Out: io.Discard, Err: io.Discard, Environ: g.IO.Environ}}
	defer q.closeBackend()
	i := 0
	for i < len(words) && strings.HasPrefix(words[i], "-") {
		a := strings.TrimLeft(words[i], "-")
		if strings.HasPrefix(a, "chdir=") {
			q.Chdir = strings.TrimPrefix(a, "chdir=")
		} else if a == "chdir" && i+1 < len(words) {
			i++
			q.Chdir = words[i]
		}
		i++
	}
	var cands []string
	switch {
	case i == len(words) && strings.HasPrefix(cur, "-"):
		cands = []string{"-chdir=", "-help", "-version"}
	case i == len(words):
		for _, c := range commands() {
			if !c.hidden {
				cands = append(cands, c.name)
			}
		}
	default:
		cands = completeCommand(ctx, q, words[i], words[i+1:], cur)
	}
	var matches []string
	for _, c := range cands {
		if strings.HasPrefix(c, cur) {
			matches = append(matches, c)
		}
	}
	views.Lines(g.IO.Out, matches...)
	return 0
}

// completeCommand completes the words after the command name, from the
// command's own definition so that the two cannot drift: its flag set
// (names; a flag's values from its choices or its placeholder), its
// subcommands (stateSubcommands) and its help's positional arguments
// (argCompleters, by the argument's name).
func completeCommand(ctx context.Context, q *Globals, name string, rest []string, cur string) []string {
	c := findCommand(name)
	if c == nil || c.hidden {
		return nil
	}
	subs := c.subcommands()
	probe := func(args []string) *flag.FlagSet {
		var fs *flag.FlagSet
		q.probe = func(f *flag.FlagSet) { fs = f }
		c.run(ctx, q, args)
		q.probe = nil
		return fs
	}
	fs := probe(nil)
	if fs == nil {
		return nil
	}
	// The positional words so far (a flag's value is none), and the flag
	// whose value cur is.
	var pos []string
	var valueOf *flag.Flag
	for i := 0; i < len(rest); i++ {
		w := rest[i]
		if f, hasValue := flagWord(fs, w); f != nil || strings.HasPrefix(w, "-") {
			if f != nil && !hasValue && !isBool(f) {
				if i == len(rest)-1 {
					valueOf = f
				}
				i++
			}
			continue
		}
		pos = append(pos, w)
		if len(pos) == 1 && len(subs) > 0 {
			if sub := probe([]string{w}); sub != nil {
				fs = sub
			}
		}
	}
	if valueOf != nil {
		return flagValues(q, valueOf, pos)
	}
	if strings.HasPrefix(cur, "-") {
		if n, _, ok := strings.Cut(strings.TrimLeft(cur, "-"), "="); ok {
			if f := fs.Lookup(n); f != nil && !isBool(f) {
				var out []string
				for _, v := range flagValues(q, f, pos) {
					out = append(out, cur[:strings.Index(cur, "=")+1]+v)
				}
				return out
			}
			return nil
		}
		var out []string
		fs.VisitAll(func(f *flag.Flag) {
			if isBool(f) {
				out = append(out, "-"+f.Name)
			} else {
				out = append(out, "-"+f.Name+"=")
			}
		})
		out = append(out, "-help")
		sort.Strings(out)
		return out
	}
	if len(subs) > 0 {
		if len(pos) == 0 {
			return subs
		}
		pos = pos[1:]
	}
	args := helps[fs.Name()].args
	if len(args) == 0 {
		return nil
	}
	i := len(pos)
	if i >= len(args) {
		last, _, _ := strings.Cut(args[len(args)-1], "  ")
		if !strings.Contains(helps[fs.Name()].synopsis, last+"...") {
			return nil
		}
		i = len(args) - 1
	}
	arg, _, _ := strings.Cut(args[i], "  ")
	if comp := argCompleters()[arg]; comp != nil {
		return comp(q, pos)
	}
	return nil
}

// flagWord is the flag w names ("-o", "--o=csv"), and whether w holds its
// value; nil when w is no flag of fs.
func flagWord(fs *flag.FlagSet, w string) (*flag.Flag, bool) {
	if !strings.HasPrefix(w, "-") || w == "-" || w == "--" {
		return nil, false
	}
	n, _, hasValue := strings.Cut(strings.TrimLeft(w, "-"), "=")
	return fs.Lookup(n), hasValue
}

func isBool(f *flag.Flag) bool {
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// choicesFlag is a string flag with a fixed set of values, which
// completion offers; the command checks the value itself.
type choicesFlag struct {
	p       *string
	choices []string
}

// choices registers a string flag whose values are one of choices.
func choices(fs *flag.FlagSet, p *string, name, value string, cs []string, usage string) {
	*p = value
	fs.Var(&choicesFlag{p: p, choices: cs}, name, usage)
}

func (c *choicesFlag) String() string {
	if c == nil || c.p == nil {
		return ""
	}
	return *c.p
}
func (c *choicesFlag) Set(v string) error { *c.p = v; return nil }
func (c *choicesFlag) Get() any           { return *c.p }

// flagValues are the values completion offers for f: its choices, else
// by its placeholder (addresses of the state's experiments or trials).
func flagValues(q *Globals, f *flag.Flag, pos []string) []string {
	if c, ok := f.Value.(*choicesFlag); ok {
		return c.choices
	}
	switch placeholders[f.Name] {
	case "experiment.NAME":
		return experimentAddresses(q, false)
	case "experiment.NAME.trial.ID":
		return trialAddresses(q)
	}
	return nil
}

// argCompleters complete a positional argument by the name the command's
// help gives it. Every argument name of every help is here (a test checks
// it); nil means the shell completes file names or nothing can be offered.
func argCompleters() map[string]func(q *Globals, pos []string) []string {
	return map[string]func(q *Globals, pos []string) []string{
		"EXPERIMENT": func(q *Globals, _ []string) []string { return experimentNames(q) },
		"TRIAL": func(q *Globals, pos []string) []string {
			if len(pos) == 0 {
				return nil
			}
			if st := quietState(q); st != nil {
				if e := st.Experiment(pos[0]); e != nil {
					return sortedKeys(e.Trials)
				}
			}
			return nil
		},
		"ADDRESS": func(q *Globals, _ []string) []string { return experimentAddresses(q, true) },
		"SOURCE": func(q *Globals, _ []string) []string {
			var out []string
			if st := quietState(q); st != nil {
				for _, n := range sortedKeys(st.Experiments) {
					out = append(out, "experiment."+n)
				}
			}
			return out
		},
		"DESTINATION": nil,
		// approve's SPEC_HASH: the held change's, from the state.
		"SPEC_HASH": func(q *Globals, pos []string) []string {
			st := quietState(q)
			if st == nil || len(pos) == 0 {
				return nil
			}
			if e := st.Experiment(pos[0]); e != nil && e.Hold != nil {
				return []string{e.Hold.SpecHash}
			}
			return nil
		},
		"TOOL":  func(*Globals, []string) []string { return sortedKeys(converters) },
		"SHELL": func(*Globals, []string) []string { return shells },
		"COMMAND": func(q *Globals, pos []string) []string {
			var out []string
			for _, c := range commands() {
				if !c.hidden {
					out = append(out, c.name)
				}
			}
			return out
		},
		"SUBCOMMAND": func(q *Globals, pos []string) []string {
			if len(pos) == 1 {
				if c := findCommand(pos[0]); c != nil {
					return c.subcommands()
				}
			}
			return nil
		},
		"FILE":     nil,
		"PLANFILE": nil,
		"TARGET":   nil,
		"LOCK_ID":  nil,
	}
}

// shells are those completion writes scripts for.
var shells = []string{"bash", "zsh", "fish"}

// experimentAddresses are experiment.NAME of the state, with each
// trial's experiment.NAME.trial.ID when trials is set.
func experimentAddresses(q *Globals, trials bool) []string {
	st := quietState(q)
	var out []string
	for _, n := range experimentNames(q) {
		out = append(out, "experiment."+n)
		if e := st.Experiment(n); trials && st != nil && e != nil {
			for _, id := range sortedKeys(e.Trials) {
				out = append(out, "experiment."+n+".trial."+id)
			}
		}
	}
	return out
}

// trialAddresses are experiment.NAME.trial.ID of every trial in the state.
func trialAddresses(q *Globals) []string {
	st := quietState(q)
	if st == nil {
		return nil
	}
	var out []string
	for _, n := range sortedKeys(st.Experiments) {
		for _, id := range sortedKeys(st.Experiments[n].Trials) {
			out = append(out, "experiment."+n+".trial."+id)
		}
	}
	return out
}

func quietState(q *Globals) *state.State {
	_, m, ok := q.openBackend(nil)
	if !ok {
		return nil
	}
	st, err := m.Load()
	if err != nil {
		return nil
	}
	return st
}

// experimentNames are the experiments of the configuration and of the
// state, sorted.
func experimentNames(q *Globals) []string {
	names := map[string]bool{}
	if cfg := q.loadConfigQuiet(); cfg != nil {
		for n := range cfg.Experiments {
			names[n] = true
		}
	}
	if st := quietState(q); st != nil {
		for n := range st.Experiments {
			names[n] = true
		}
	}
	return sortedKeys(names)
}
