package command

import (
	"context"
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"

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
	case "bash":
		io.WriteString(g.IO.Out, bashCompletion)
	case "zsh":
		io.WriteString(g.IO.Out, zshCompletion)
	case "fish":
		io.WriteString(g.IO.Out, fishCompletion)
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
	for _, c := range cands {
		if strings.HasPrefix(c, cur) {
			fmt.Fprintln(g.IO.Out, c)
		}
	}
	return 0
}

func completeCommand(ctx context.Context, q *Globals, name string, rest []string, cur string) []string {
	c := findCommand(name)
	if c == nil || c.hidden {
		return nil
	}
	var pos []string
	for _, w := range rest {
		if !strings.HasPrefix(w, "-") {
			pos = append(pos, w)
		}
	}
	switch name {
	case "help":
		if len(pos) == 0 {
			var out []string
			for _, c := range commands() {
				if !c.hidden {
					out = append(out, c.name)
				}
			}
			return out
		}
		return nil
	case "completion":
		return []string{"bash", "zsh", "fish"}
	case "state":
		if len(pos) == 0 && !strings.HasPrefix(cur, "-") {
			return []string{"list", "show", "rm"}
		}
	}
	if strings.HasPrefix(cur, "-target=") {
		var out []string
		for _, n := range experimentNames(q) {
			out = append(out, "-target=experiment."+n)
		}
		return out
	}
	if strings.HasPrefix(cur, "-") {
		probeArgs := []string(nil)
		if name == "state" && len(pos) > 0 {
			probeArgs = []string{pos[0]}
		}
		var fs *flag.FlagSet
		q.probe = func(f *flag.FlagSet) { fs = f }
		c.run(ctx, q, probeArgs)
		q.probe = nil
		if fs == nil {
			return nil
		}
		var out []string
		fs.VisitAll(func(f *flag.Flag) {
			if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
				out = append(out, "-"+f.Name)
			} else {
				out = append(out, "-"+f.Name+"=")
			}
		})
		out = append(out, "-help")
		sort.Strings(out)
		return out
	}
	switch name {
	case "trials", "import":
		if len(pos) == 0 {
			return experimentNames(q)
		}
	case "logs":
		switch len(pos) {
		case 0:
			return experimentNames(q)
		case 1:
			if st := quietState(q); st != nil {
				if e := st.Experiment(pos[0]); e != nil {
					return sortedKeys(e.Trials)
				}
			}
		}
	case "state":
		if len(pos) >= 1 && (pos[0] == "show" || pos[0] == "rm") {
			if st := quietState(q); st != nil {
				var out []string
				for _, n := range sortedKeys(st.Experiments) {
					out = append(out, "experiment."+n)
					for _, id := range sortedKeys(st.Experiments[n].Trials) {
						out = append(out, "experiment."+n+".trial."+id)
					}
				}
				return out
			}
		}
	}
	return nil
}

func quietState(q *Globals) *state.State {
	sd, err := q.stateDir()
	if err != nil {
		return nil
	}
	st, err := state.Open(sd).Load()
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
