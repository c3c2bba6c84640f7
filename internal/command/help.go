package command

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/trialform/trialform/internal/didyoumean"
	"github.com/trialform/trialform/internal/views"
)

// helpText is what `trialform CMD -help` (and `trialform help CMD`)
// prints around the flags: a synopsis, the positional arguments, a
// description and an example.
type helpText struct {
	synopsis string   // "trialform plan [options]"
	args     []string // "NAME  what it is", one per positional argument
	desc     string
	example  string
}

// helps holds the help of every command and subcommand, by the name its
// FlagSet has ("plan", "state rm").
var helps = map[string]helpText{
	"validate": {
		synopsis: "trialform validate [options]",
		desc: `Checks the configuration in the working directory: syntax, references,
search spaces, tuner and assessor settings. It reads no state and touches no
platform. Required variables without a value are checked as unknown (plan and
apply need them). Errors name the file and line; exit 1 when there is one.`,
		example: "trialform validate\n  trialform -chdir=experiments validate -json",
	},
	"fmt": {
		synopsis: "trialform fmt [options] [TARGET...]",
		args: []string{
			"TARGET  a *.hcl file, a -var-file (*.tfvars) or a directory (its *.hcl files); - reads standard input and writes the result to standard output. Default: the working directory",
		},
		desc: `Rewrites *.hcl files in the canonical layout (that of hclwrite, as terraform fmt).
With -check nothing is written and the exit status is 3 when a file would change,
for CI.`,
		example: "trialform fmt -check -diff\n  trialform fmt experiments/ extra.hcl\n  cat main.hcl | trialform fmt -",
	},
	"plan": {
		synopsis: "trialform plan [options]",
		desc: `Refreshes what runs on each platform, diffs it against the configuration and
the state, asks the tuner for the next parameters and prints exactly what apply
will do. plan never writes the state. Limit it to some experiments with -target.
A plan saved with -out keeps the values of the variables given to plan (-var,
-var-file, TRIALFORM_VAR_name), except sensitive ones, which apply needs again.`,
		example: "trialform plan -out=next.plan\n  trialform plan -target=experiment.svm -detailed-exitcode",
	},
	"apply": {
		synopsis: "trialform apply [options] [PLANFILE]",
		args: []string{
			"PLANFILE  a plan saved by `plan -out`: apply it exactly, refusing it when the state or the configuration moved on",
		},
		desc: `Plans, asks for approval and applies: creates, resumes and tears down trials,
saving the state after every change. -wait keeps reconciling until every
experiment is done. The first Ctrl-C stops launching and lets calls in flight
finish and the state be saved; a second one cancels the calls in flight.`,
		example: "trialform apply -auto-approve -wait\n  trialform apply next.plan\n  trialform apply -json -auto-approve | jq .type",
	},
	"destroy": {
		synopsis: "trialform destroy [options]",
		desc: `Tears down every trial and removes the experiments (their trial directories and
results) from the state. It takes no experiment names: limit it with
-target=experiment.NAME.`,
		example: "trialform destroy -target=experiment.svm\n  trialform destroy -auto-approve",
	},
	"watch": {
		synopsis: "trialform watch [options]",
		desc: `Re-plans on every change of the configuration files and keeps reconciling. It
only plans unless -auto-approve is given; plans that remove experiments or tear
down trials are held without -allow-destroy. Ctrl-C stops watching; trials keep
running.`,
		example: "trialform watch -auto-approve",
	},
	"controller": {
		synopsis: "trialform controller -repo URL [options]",
		desc: `Follows a git branch: at each new commit and every -interval it fetches, loads
the definitions under -path, plans, and applies under -policy. auto applies
creates, resumes and in-place updates; an experiment whose plan tears down
trials or removes it (a new generation, a removed block) is held until
"trialform approve" approves that exact change. plan-only applies nothing. A
commit that does not validate leaves the last good definitions in force. The
state is where the definitions' backend block says; without one it is local,
in -work-dir (in a pod, give a kubernetes or pg backend: an emptyDir is lost
with the pod). Held changes are recorded in the state for "trialform approve"
from any working copy with the same backend. Logs are JSON lines; -listen
serves /healthz, /readyz, /metrics, /held and the dashboard. With -leader-elect
it is one of several replicas sharing a Lease: only the leader plans and
applies, the others stand by; they need a shared backend (kubernetes, pg) and
trials on a platform every replica reaches.`,
		example: "trialform controller -repo https://git.example.com/ml/hpo.git -branch main -path experiments -listen :8080",
	},
	"approve": {
		synopsis: "trialform approve [options] [EXPERIMENT [SPEC_HASH]]",
		args:     []string{"EXPERIMENT  the experiment whose held change to approve; without it, the held changes are listed", "SPEC_HASH   the spec hash the change moves to (or its first 6+ characters, as listed); refused if the held change differs"},
		desc: `Approves the change "trialform controller" holds for EXPERIMENT: exactly that
change (its spec hash and generation, or its removal). The controller records
what it holds in the state; approve records the approval there, under the
experiment's lock, from any working copy whose backend block points at the
same state (pg, kubernetes; with the local backend, the controller's work
directory). The controller applies it at once (pg, kubernetes: a change
notification) or at its next pass. A later, different change is held again.`,
		example: "trialform approve\n  trialform approve svm\n  trialform approve svm 9c2e41d07a1b",
	},
	"show": {
		synopsis: "trialform show [options] [PLANFILE]",
		args:     []string{"PLANFILE  a plan saved by `plan -out`; without it, the state is shown"},
		desc:     `Shows the state (experiments, trials, results) or a saved plan.`,
		example:  "trialform show\n  trialform show -json next.plan",
	},
	"trials": {
		synopsis: "trialform trials [options] [EXPERIMENT...]",
		args:     []string{"EXPERIMENT  experiments of the state (may be left out when the state holds one; -all takes every one)"},
		desc: `Prints the trials of one or more experiments: a table (the best marked *), or
json, jsonl, csv or markdown with -o. -q filters with the query language
(status:succeeded, params.lr:<0.01, metrics.loss:0.1..0.3, comma = and, | = or,
~ = not), -sort orders ("-metrics.loss,params.lr": a leading - is descending),
-limit and -top cut the list. See docs/results.md, "Looking at results".`,
		example: "trialform trials quickstart -q 'status:succeeded, params.optimizer:adam|sgd' -sort -metric -top 5\n  trialform trials -all -o csv > trials.csv",
	},
	"metrics": {
		synopsis: "trialform metrics [options] EXPERIMENT TRIAL",
		args:     []string{"EXPERIMENT  an experiment of the state", "TRIAL  a trial id (t0003)"},
		desc:     `Prints one trial's intermediate results (step, value, other metrics, time).`,
		example:  "trialform metrics quickstart t0003 -o csv",
	},
	"export": {
		synopsis: "trialform export [options] [EXPERIMENT...]",
		args:     []string{"EXPERIMENT  experiments of the state (-all: every one)"},
		desc: `Writes every trial with its params, final metrics and intermediate series as
JSON (format_version 1, streamed) or CSV, for a notebook.`,
		example: "trialform export quickstart -o json > quickstart.json",
	},
	"refresh": {
		synopsis: "trialform refresh [options] [EXPERIMENT...]",
		args:     []string{"EXPERIMENT  only these experiments (default: every one)"},
		desc: `Reads what the platforms report and writes it into the state under the lock,
like terraform apply -refresh-only. It starts and stops nothing.`,
		example: "trialform refresh && trialform trials quickstart",
	},
	"tensorboard": {
		synopsis: "trialform tensorboard [options] EXPERIMENT [TRIAL...]",
		args:     []string{"EXPERIMENT  an experiment of the state", "TRIAL  only these trials"},
		desc: `Starts the tensorboard on PATH over the trials' logdirs (one tree per
experiment, a run per trial), prints its URL and stops it on Ctrl-C. Remote
trials' logdirs are synced back over SFTP first. Without TensorBoard it prints
the logdir and how to install it.`,
		example: "trialform tensorboard quickstart -port 6006\n  trialform tensorboard quickstart -print-logdir",
	},
	"logs": {
		synopsis: "trialform logs [options] EXPERIMENT TRIAL",
		args:     []string{"EXPERIMENT  an experiment of the state", "TRIAL  a trial id (t0003)"},
		desc:     `Prints a trial's stdout and stderr; -f follows them until the trial ends.`,
		example:  "trialform logs -f quickstart t0003",
	},
	"import": {
		synopsis: "trialform import [options] EXPERIMENT TRIAL...\n       trialform import [options] experiment.NAME.trial.ID\n       trialform import [options] -all EXPERIMENT",
		args: []string{
			"EXPERIMENT  an experiment of the configuration",
			"TRIAL  ids of trials its platform holds that the state does not know",
		},
		desc: `Adopts trials the experiment's platform holds but the state does not know (an
orphan of this state, or a trial another state started) instead of tearing them
down. -all adopts every such trial of EXPERIMENT, running or ended (use it to
recover a lost state file).`,
		example: "trialform import svm t0007\n  trialform import -all svm",
	},
	"state": {
		synopsis: "trialform state SUBCOMMAND [options] [ADDRESS...]",
		args: []string{
			"SUBCOMMAND  " + stateSubcommandList(),
			"ADDRESS  experiment.NAME or experiment.NAME.trial.ID (also NAME and NAME/ID)",
		},
		desc: `Inspects or edits the state, or copies it out of and into the backend (pull,
push). Run trialform state SUBCOMMAND -help for each.`,
		example: "trialform state list\n  trialform state show experiment.svm.trial.t0003",
	},
	"state list": {
		synopsis: "trialform state list [options]",
		desc:     `Lists the address of every experiment and trial in the state.`,
		example:  "trialform state list",
	},
	"state show": {
		synopsis: "trialform state show [options] ADDRESS",
		args:     []string{"ADDRESS  experiment.NAME or experiment.NAME.trial.ID"},
		desc:     `Prints one experiment or trial of the state as JSON.`,
		example:  "trialform state show experiment.svm.trial.t0003",
	},
	"state rm": {
		synopsis: "trialform state rm [options] ADDRESS...",
		args:     []string{"ADDRESS  experiment.NAME or experiment.NAME.trial.ID"},
		desc: `Removes experiments or trials from the state. Nothing on the platforms is
touched: a running trial no longer in the state is planned as an orphan teardown
(or adopt it again with import).`,
		example: "trialform state rm experiment.svm.trial.t0003",
	},
	"state mv": {
		synopsis: "trialform state mv [options] SOURCE DESTINATION",
		args: []string{
			"SOURCE  experiment.OLD, an experiment in the state",
			"DESTINATION  experiment.NEW, a name not in the state",
		},
		desc: `Renames an experiment in the state, under the lock and with a backup, keeping
its trials, results and metric series. Running trials keep their platform
identity. A moved { from, to } block in the configuration does the same at the
next apply.`,
		example: "trialform state mv experiment.svm experiment.svm_rbf",
	},
	"state pull": {
		synopsis: "trialform state pull [options]",
		desc: `Prints the state as one JSON document (the format of the local backend's
state file), whichever backend holds it: to look at it, keep a copy, or push it
to another backend with state push.`,
		example: "trialform state pull > backup.json",
	},
	"state push": {
		synopsis: "trialform state push [options] FILE",
		args:     []string{"FILE  a state document (from state pull, or the local backend's state file); - reads standard input"},
		desc: `Writes FILE as the state of the working copy's backend, under the whole-state
lock. It refuses a state of another lineage, one older than the backend's (a
lower serial), another version with the same serial, and unfinished trials this
working copy cannot reach where they run (another working copy's local trials,
another namespace or machine than the platform block's), unless -force. The
metric series are not in the document: they stay as the backend holds them.`,
		example: "trialform state push backup.json\n  trialform state pull | trialform -chdir=../other state push -",
	},
	"init": {
		synopsis: "trialform init [options]",
		desc: `Initializes the working copy's state backend (the configuration's backend
block; without one, the local .trialform directory) and records it in the state
directory; every other command checks the block against that record. When the
block changed, -migrate-state copies the state, every metric series and the
refresh marks from the recorded backend to the configured one, holding both
locks and refusing to overwrite a state of another lineage or a newer one;
-reconfigure uses the configured backend as it is. Credentials are never
recorded: they come from sensitive variables or the environment every time.`,
		example: "trialform init\n  trialform init -migrate-state\n  TRIALFORM_VAR_pg_password=... trialform init -reconfigure",
	},
	"force-unlock": {
		synopsis: "trialform force-unlock [options] LOCK_ID",
		args:     []string{"LOCK_ID  the id printed in the lock error"},
		desc: `Removes a state lock whose holder is gone. Make sure it really is.

While the backend block differs from the backend init recorded (init -migrate-state not run yet,
or killed while it held a lock), the lock is looked for in both backends.`,
		example: "trialform force-unlock 8a1c2f",
	},
	"version": {
		synopsis: "trialform version [options]",
		desc:     `Prints the version.`,
		example:  "trialform version",
	},
	"help": {
		synopsis: "trialform help [options] [COMMAND [SUBCOMMAND]]",
		args:     []string{"COMMAND  a command; without it the list of commands is printed", "SUBCOMMAND  a subcommand of COMMAND (state rm)"},
		desc:     `Prints the help of a command, as trialform COMMAND -help does.`,
		example:  "trialform help plan\n  trialform help state rm",
	},
	"convert": {
		synopsis: "trialform convert [options] TOOL FILE",
		args: []string{
			"TOOL  nni (an NNI config.yml, v1 or v2 schema), katib (a Katib v1beta1 Experiment) or polyaxon (a polyaxonfile)",
			"FILE  the file to convert",
		},
		desc: `Writes an existing definition as one fmt-clean trialform HCL file. Every field
that cannot be mapped becomes a "# not converted: FIELD: WHY" comment and a
warning on stderr; nothing is dropped silently. NNI's search space stays where it
is (nni_file) unless -inline writes it as HCL.`,
		example: "trialform convert nni config.yml -o main.hcl\n  trialform convert katib experiment.yaml -o katib.hcl\n  trialform convert polyaxon polyaxonfile.yaml",
	},
	"ui": {
		synopsis: "trialform ui [options]",
		desc: `Serves a live, read-only web dashboard of the state in the working directory:
overview, experiment pages (trials table with the query language, charts,
parameter importance), trial pages (logs, TensorBoard scalars), the current plan,
the history of the definitions and a comparison. It reads the state without the
lock, so it runs beside apply -wait and watch. Any address but 127.0.0.1 needs a
token; without -token a random one is printed.`,
		example: "trialform ui -open\n  trialform ui -addr 127.0.0.2:9000 -token s3cret",
	},
	"completion": {
		synopsis: "trialform completion [options] SHELL",
		args:     []string{"SHELL  bash, zsh or fish"},
		desc: `Prints a script that completes trialform's commands, flags and experiment names
in SHELL. Load it from the shell's start-up file.`,
		example: "source <(trialform completion bash)      # in ~/.bashrc\n  trialform completion fish > ~/.config/fish/completions/trialform.fish",
	},
}

// placeholders name the value of a flag in the help ("-out=FILE").
var placeholders = map[string]string{
	"out": "FILE", "target": "experiment.NAME", "var": "'NAME=VALUE'", "var-file": "FILE",
	"lock-timeout": "DURATION", "interval": "DURATION", "poll-interval": "DURATION",
	"parallelism": "N", "replace": "experiment.NAME.trial.ID", "stop": "experiment.NAME.trial.ID",
}

// printHelp writes the help of the command whose flags are fs.
func printHelp(w io.Writer, fs *flag.FlagSet) {
	h, ok := helps[fs.Name()]
	if !ok {
		h = helpText{synopsis: "trialform " + fs.Name() + " [options]"}
	}
	p := views.HelpPage{Synopsis: h.synopsis, Desc: h.desc, Example: h.example}
	for _, a := range h.args {
		name, what, _ := strings.Cut(a, "  ")
		p.Args = append(p.Args, views.HelpItem{Name: name, What: what})
	}
	var flags []*flag.Flag
	fs.VisitAll(func(f *flag.Flag) { flags = append(flags, f) })
	sort.Slice(flags, func(i, j int) bool { return flags[i].Name < flags[j].Name })
	for _, f := range flags {
		p.Flags = append(p.Flags, views.HelpItem{Name: flagSynopsis(f), What: flagUsage(f)})
	}
	views.Help(w, p)
}

// flagSynopsis is "-name" for a boolean flag, else "-name=PLACEHOLDER".
func flagSynopsis(f *flag.Flag) string {
	if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
		return "-" + f.Name
	}
	ph := placeholders[f.Name]
	if ph == "" {
		var v any
		if g, ok := f.Value.(flag.Getter); ok {
			v = g.Get()
		}
		switch v.(type) {
		case time.Duration:
			ph = "DURATION"
		case int, int64, uint, uint64:
			ph = "N"
		default:
			ph = "VALUE"
		}
	}
	if strings.HasPrefix(ph, "'") {
		return "-" + f.Name + " " + ph
	}
	return "-" + f.Name + "=" + ph
}

// flagUsage is the usage text and, when it is not the zero value, the
// default. The text is printed as written (no backquote convention).
func flagUsage(f *flag.Flag) string {
	u := f.Usage
	switch f.DefValue {
	case "", "0", "0s", "false", "[]":
	default:
		u += fmt.Sprintf(" (default %s)", f.DefValue)
	}
	return u
}

// argSpec says how many positional arguments a command takes; hint is
// added to the "Too many command line arguments" error.
type argSpec struct {
	min, max int    // max < 0: no limit
	hint     string // "{arg}" stands for the first extra argument
}

// errProbe is what parse returns in probe mode (completion reads the
// flag set of a command without running it).
var errProbe = errors.New("probe")

// parse parses the flags and positional arguments of the command whose
// flags are fs. On -h/-help it prints the help to stdout (code 0); on a
// bad flag or a wrong number of arguments it prints an error (code 1).
// ok is false when the command must return code at once.
func (g *Globals) parse(fs *flag.FlagSet, args []string, spec argSpec) (pos []string, code int, ok bool) {
	if g.probe != nil {
		g.probe(fs)
		return nil, 0, false
	}
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	pos, err := parseFlags(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		printHelp(g.IO.Out, fs)
		return nil, 0, false
	}
	if err != nil {
		views.FlagError(g.IO.Err, flagHint(fs, err), fs.Name())
		return nil, 1, false
	}
	h := helps[fs.Name()]
	switch {
	case spec.max >= 0 && len(pos) > spec.max:
		extra := pos[spec.max:]
		views.TooManyArguments(g.IO.Err, quoteAll(extra), strings.ReplaceAll(spec.hint, "{arg}", extra[0]), h.synopsis, fs.Name())
		return nil, 1, false
	case len(pos) < spec.min:
		views.NotEnoughArguments(g.IO.Err, spec.hint, h.synopsis, fs.Name())
		return nil, 1, false
	}
	return pos, 0, true
}

// flagHint adds to the flag package's error what to do: the flag meant by
// an unknown one ("flag provided but not defined: -polcy" said nothing
// more), and for a duration without its unit ("-interval 10": "parse
// error") the form one takes.
func flagHint(fs *flag.FlagSet, err error) error {
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: -"); ok {
		var names []string
		fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
		if s := didyoumean.Sentence(strings.TrimLeft(name, "-"), names, "-%s"); s != "" {
			return fmt.Errorf("%w.%s", err, s)
		}
		return err
	}
	if rest, ok := strings.CutPrefix(msg, "invalid value "); ok {
		if i := strings.Index(rest, " for flag -"); i >= 0 {
			name, _, _ := strings.Cut(rest[i+len(" for flag -"):], ":")
			if f := fs.Lookup(name); f != nil {
				if g, ok := f.Value.(flag.Getter); ok {
					if _, ok := g.Get().(time.Duration); ok {
						return fmt.Errorf("%w: -%s takes a duration with its unit, such as 30s, 5m or 1h30m", err, name)
					}
				}
			}
		}
	}
	return err
}

func quoteAll(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = fmt.Sprintf("%q", s)
	}
	return strings.Join(q, " ")
}

// runHelp is `trialform help [COMMAND [SUBCOMMAND]]`.
func runHelp(ctx context.Context, g *Globals, args []string) int {
	fs := flag.NewFlagSet("help", flag.ContinueOnError)
	pos, code, ok := g.parse(fs, args, argSpec{max: 2})
	if !ok {
		return code
	}
	if len(pos) == 0 {
		usage(g.IO.Out)
		return 0
	}
	c := findCommand(pos[0])
	if c == nil {
		unknownCommand(g.IO.Err, pos[0])
		return 1
	}
	sub := []string{"-help"}
	if len(pos) == 2 {
		sub = []string{pos[1], "-help"}
	}
	return c.run(ctx, g, sub)
}
