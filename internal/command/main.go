// Package command is trialform's command-line interface: one file per
// subcommand, each parsing its flags into an options struct and calling a
// run function that tests can call with captured IO. It wires the
// packages together (schema → plan → apply, providers built explicitly
// here) and does the I/O; it holds no domain logic.
package command

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"sort"
	"strings"

	"github.com/trialform/trialform/internal/didyoumean"
	"github.com/trialform/trialform/internal/views"
	"github.com/trialform/trialform/providers/local"
)

// Version is the trialform version (set with -ldflags at release).
var Version = "0.1.0-dev"

// IO is the command's streams.
type IO struct {
	In      io.Reader
	Out     io.Writer
	Err     io.Writer
	IsTTY   bool // stdout is a terminal
	Environ []string
}

// Main runs the command line of this process.
func Main() int {
	if len(os.Args) > 1 && os.Args[1] == "__supervise" {
		return local.SupervisorMain(os.Args[2:])
	}
	if path := os.Getenv("TRIALFORM_CPUPROFILE"); path != "" {
		// For benchmarks: a CPU profile of this invocation.
		if f, err := os.Create(path); err == nil {
			pprof.StartCPUProfile(f)
			defer pprof.StopCPUProfile()
		}
	}
	in := newInterrupts(os.Stderr)
	defer in.stop()
	io := IO{In: os.Stdin, Out: os.Stdout, Err: os.Stderr, IsTTY: isTerminal(os.Stdout), Environ: os.Environ()}
	g := &Globals{IO: io, Hard: in.hard, graceful: in.setGraceful, cancelFirst: in.setCancelFirst}
	code := run(in.soft, g, os.Args[1:])
	pprof.StopCPUProfile()
	if sig := in.received(); sig != nil && (g.ran == nil || !g.ran.untilStopped) {
		// A command a signal cut short exits as the shell reports death
		// by that signal (130 after Ctrl-C, 143 after SIGTERM), whatever
		// it returned once it had finished stopping. Those that run
		// until they are stopped end so normally: they exit 0.
		return exitCode(sig)
	}
	return code
}

type command struct {
	name    string
	summary string
	run     func(ctx context.Context, g *Globals, args []string) int
	hidden  bool
	// graceful commands handle the first interrupt themselves (stop
	// launching, save the state); any other command ends at the first
	// SIGINT or SIGTERM.
	graceful bool
	// onInterrupt is what a graceful command prints at the first
	// interrupt (nothing when empty).
	onInterrupt string
	// untilStopped commands run until an interrupt (watch, ui,
	// tensorboard, logs -f): stopped so, they exit 0, not 128+N.
	untilStopped bool
	// cancelFirst commands (refresh, which only reads) cancel the calls in
	// flight at the first interrupt instead of waiting for them.
	cancelFirst bool
}

// stopApplying is the first interrupt's message of the commands that
// start and stop trials.
const stopApplying = "Interrupt received: stopping gracefully (no new trials start; calls in flight finish and the state is saved). Interrupt again to cancel the calls in flight."

func commands() []command {
	return []command{
		{name: "init", summary: "Initialize the state backend; -migrate-state copies the state to a new one", run: runInit},
		{name: "validate", summary: "Check the configuration (syntax, references, search spaces)", run: runValidate},
		{name: "fmt", summary: "Rewrite *.hcl files in canonical format", run: runFmt},
		{name: "plan", summary: "Show what apply would do", run: runPlan},
		{name: "apply", summary: "Create, resume and tear down trials (-wait: until every experiment is done)", run: runApply, graceful: true, onInterrupt: stopApplying},
		{name: "watch", summary: "Re-plan on every file change and keep reconciling (-auto-approve: apply too)", run: runWatch, graceful: true, untilStopped: true, onInterrupt: "Interrupt received: stopping watching (trials keep running; a pass in flight finishes, and with -auto-approve what it applied is saved). Interrupt again to cancel the calls in flight."},
		{name: "controller", summary: "Reconcile from a git branch (in the cluster): plan and apply each new commit, holding destructive changes until approved", run: runController, graceful: true, untilStopped: true, onInterrupt: "Interrupt received: stopping the controller (trials keep running; a pass in flight finishes and the state is saved). Interrupt again to cancel the calls in flight."},
		{name: "approve", summary: "Approve a destructive change a controller holds (POST /approve)", run: runApprove},
		{name: "destroy", summary: "Tear down every trial and remove the experiments from the state", run: runDestroy, graceful: true, onInterrupt: stopApplying},
		{name: "show", summary: "Show the state or a saved plan", run: runShow},
		{name: "trials", summary: "Results of experiments' trials: query (-q), sort, formats, curves", run: runTrials},
		{name: "metrics", summary: "One trial's intermediate results (-o table|csv|json)", run: runMetrics},
		{name: "export", summary: "Export trials with params, metrics and series (-o json|csv)", run: runExport},
		{name: "refresh", summary: "Write what the platforms report into the state; start or stop nothing", run: runRefresh, graceful: true, cancelFirst: true, onInterrupt: "Interrupt received: stopping the refresh (the reads in flight are cancelled; what was read is saved). Interrupt again to exit at once."},
		{name: "tensorboard", summary: "Start TensorBoard on the trials' logdirs (-print-logdir: only print it)", run: runTensorBoard, graceful: true, untilStopped: true, onInterrupt: "Interrupt received: stopping TensorBoard."},
		{name: "logs", summary: "Show a trial's output (-f to follow)", run: runLogs, graceful: true, untilStopped: true},
		{name: "ui", summary: "Serve a live, read-only web dashboard (127.0.0.1:8080)", run: runUI, graceful: true, untilStopped: true, onInterrupt: "Interrupt received: stopping the dashboard (trials keep running)."},
		{name: "convert", summary: "Convert an NNI config, a Katib Experiment or a polyaxonfile to HCL", run: runConvert},
		{name: "import", summary: "Adopt trials the platform runs but the state does not know (orphans)", run: runImport, graceful: true, onInterrupt: stopApplying},
		{name: "state", summary: "Inspect or edit the state (list, show, rm, mv, pull, push)", run: runState},
		{name: "force-unlock", summary: "Remove a stale state lock", run: runForceUnlock},
		{name: "completion", summary: "Print a shell completion script (bash, zsh, fish)", run: runCompletion},
		{name: "help", summary: "Show the help of a command", run: runHelp},
		{name: "version", summary: "Print the version", run: runVersion},
		{name: "__complete", summary: "completion candidates (used by the completion scripts)", run: runComplete, hidden: true},
	}
}

// subcommands are the command's subcommands (state's), nil for most.
func (c *command) subcommands() []string {
	if c.name == "state" {
		return stateSubcommandNames()
	}
	return nil
}

func findCommand(name string) *command {
	for _, c := range commands() {
		if c.name == name {
			return &c
		}
	}
	return nil
}

// Globals are the options before the subcommand.
type Globals struct {
	Chdir string
	IO    IO
	// Hard is cancelled on the second interrupt: calls in flight on the
	// platforms are abandoned. Nil means it is never cancelled separately
	// from the command's context.
	Hard context.Context
	// probe, when set, receives the flag set of the command instead of
	// running it (completion).
	probe func(*flag.FlagSet)
	// graceful is told whether the command handles the first interrupt,
	// and what to say when it comes.
	graceful func(graceful bool, msg string)
	// ran is the command run() started.
	ran *command
	// cancelFirst is told whether the first interrupt cancels the calls in
	// flight.
	cancelFirst func(bool)
	// events, when set (apply -json), receives errors as diagnostics.
	events *views.Events
	// uiProviders is the dashboard's shared provider set (ui only).
	uiProviders *sharedProviders
	// backend is the state backend the command opened (openBackend).
	backend *openedBackend
	// stateDirAt, when set, is the state directory instead of the
	// configuration directory's .trialform (the controller keeps it out
	// of its git checkout).
	stateDirAt string
	// notice, when set, says a state backend's outage or recovery instead
	// of stderr (the controller: a record of its JSON log).
	notice func(msg string)
}

// hard is the context for calls that must survive the first interrupt.
func (g *Globals) hard(ctx context.Context) context.Context {
	if g.Hard != nil {
		return g.Hard
	}
	return context.WithoutCancel(ctx)
}

// Run runs one command line (without the program name).
func Run(ctx context.Context, args []string, io IO) int {
	return run(ctx, &Globals{IO: io}, args)
}

func run(ctx context.Context, g *Globals, args []string) int {
	io := g.IO
	for len(args) > 0 && strings.HasPrefix(args[0], "-") {
		a := strings.TrimLeft(args[0], "-")
		switch {
		case strings.HasPrefix(a, "chdir="):
			g.Chdir = strings.TrimPrefix(a, "chdir=")
		case a == "chdir" && len(args) > 1:
			g.Chdir = args[1]
			args = args[1:]
		case a == "version" || a == "v":
			args = []string{"version"}
			continue
		case a == "help" || a == "h":
			usage(io.Out)
			return 0
		default:
			// A command's option before the command (-auto-approve apply):
			// say where it goes.
			for i, rest := range args[1:] {
				if strings.HasPrefix(rest, "-") {
					continue
				}
				if findCommand(rest) != nil {
					line := []string{"trialform"}
					if g.Chdir != "" {
						line = append(line, "-chdir="+g.Chdir)
					}
					line = append(line, rest)
					line = append(line, args[:i+1]...)
					line = append(line, args[i+2:]...)
					return g.errorf("%s is an option of the command, not a global one: write it after the command: %s", args[0], strings.Join(line, " "))
				}
				break
			}
			views.UnknownGlobalOption(io.Err, args[0], commandList())
			return 1
		}
		args = args[1:]
	}
	if len(args) == 0 {
		if g.Chdir != "" {
			hint := ""
			if findCommand(g.Chdir) != nil {
				hint = fmt.Sprintf(" (%q was taken as the directory: write -chdir=DIR %s)", g.Chdir, g.Chdir)
			}
			g.errorf("no command after -chdir=%s%s", g.Chdir, hint)
		}
		usage(io.Err)
		return 1
	}
	c := findCommand(args[0])
	if c == nil {
		unknownCommand(io.Err, args[0])
		return 1
	}
	g.ran = c
	if g.graceful != nil {
		g.graceful(c.graceful, c.onInterrupt)
	}
	if g.cancelFirst != nil {
		g.cancelFirst(c.cancelFirst)
	}
	defer g.closeBackend()
	return c.run(ctx, g, args[1:])
}

// unknownCommand says that name is no command, naming the closest one
// (`unknown command "aply". Did you mean "apply"?`, as Terraform says it)
// instead of printing the whole usage; the usage comes only when no
// command is close. Like every usage error it exits 1.
func unknownCommand(w io.Writer, name string) {
	var names []string
	for _, c := range commands() {
		if !c.hidden {
			names = append(names, c.name)
		}
	}
	views.UnknownCommand(w, name, didyoumean.Sentence(name, names, "%q"), commandList())
}

func usage(w io.Writer) { views.Usage(w, commandList()) }

// commandList is the commands people may run, as the usage lists them.
func commandList() []views.Command {
	var l []views.Command
	for _, c := range commands() {
		if !c.hidden {
			l = append(l, views.Command{Name: c.name, Summary: c.summary})
		}
	}
	return l
}

// parseFlags parses flags that may come before, between or after the
// positional arguments (Go's flag package stops at the first positional).
func parseFlags(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		if rest[0] == "--" {
			return append(pos, rest[1:]...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// multiFlag collects a repeatable string flag.
type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }
func (m *multiFlag) Get() any           { return []string(*m) }

// targetFlag is -target: experiment addresses (experiment.NAME, or a bare
// NAME), repeatable. A trial's address is refused pointing at -replace and
// -stop, any other address saying what -target takes.
type targetFlag []string

func (m *targetFlag) String() string { return strings.Join(*m, ",") }
func (m *targetFlag) Get() any       { return []string(*m) }
func (m *targetFlag) Set(v string) error {
	name := strings.TrimPrefix(v, "experiment.")
	if exp, trial, ok := strings.Cut(name, ".trial."); ok && strings.HasPrefix(v, "experiment.") && !strings.Contains(exp, ".") && trial != "" && !strings.Contains(trial, ".") {
		return fmt.Errorf("-target takes experiment addresses (experiment.NAME), not a trial: to run trial %s of experiment %s again, plan or apply with -replace=%s; to stop it, with -stop=%s", trial, exp, v, v)
	}
	if name == "" {
		return fmt.Errorf("-target takes experiment addresses (experiment.NAME), not an empty name")
	}
	if strings.Contains(name, ".") {
		return fmt.Errorf("-target takes experiment addresses (experiment.NAME), not %s", v)
	}
	*m = append(*m, v)
	return nil
}

func runVersion(ctx context.Context, g *Globals, args []string) int {
	fs := flag.NewFlagSet("version", flag.ContinueOnError)
	if _, code, ok := g.parse(fs, args, argSpec{}); !ok {
		return code
	}
	views.Version(g.IO.Out, Version)
	return 0
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}
