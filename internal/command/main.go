// Package command is trialform's command-line interface: one file per
// subcommand, each parsing its flags into an options struct and calling a
// run function that tests can call with captured IO. It wires the
// packages together (schema → plan → apply, providers built explicitly
// here) and does the I/O; it holds no domain logic.
package command

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/pprof"
	"sort"
	"strings"
	"syscall"

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
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	io := IO{In: os.Stdin, Out: os.Stdout, Err: os.Stderr, IsTTY: isTerminal(os.Stdout), Environ: os.Environ()}
	code := Run(ctx, os.Args[1:], io)
	pprof.StopCPUProfile()
	return code
}

type command struct {
	name    string
	summary string
	run     func(ctx context.Context, g *Globals, args []string) int
	hidden  bool
}

func commands() []command {
	return []command{
		{name: "validate", summary: "Check the configuration (syntax, references, search spaces)", run: runValidate},
		{name: "fmt", summary: "Rewrite *.hcl files in canonical format", run: runFmt},
		{name: "plan", summary: "Show what apply would do", run: runPlan},
		{name: "apply", summary: "Create, resume and tear down trials (-wait: until every experiment is done)", run: runApply},
		{name: "watch", summary: "Re-plan on every file change and keep reconciling (-auto-approve: apply too)", run: runWatch},
		{name: "destroy", summary: "Tear down every trial and remove the experiments from the state", run: runDestroy},
		{name: "show", summary: "Show the state or a saved plan", run: runShow},
		{name: "trials", summary: "Results of experiments' trials: query (-q), sort, formats, curves", run: runTrials},
		{name: "metrics", summary: "One trial's intermediate results (-o table|csv|json)", run: runMetrics},
		{name: "export", summary: "Export trials with params, metrics and series (-o json|csv)", run: runExport},
		{name: "refresh", summary: "Write what the platforms report into the state; start or stop nothing", run: runRefresh},
		{name: "tensorboard", summary: "Start TensorBoard on the trials' logdirs (-print-logdir: only print it)", run: runTensorBoard},
		{name: "logs", summary: "Show a trial's output (-f to follow)", run: runLogs},
		{name: "ui", summary: "Serve a live, read-only web dashboard (127.0.0.1:8080)", run: runUI},
		{name: "import", summary: "Adopt trials the platform runs but the state does not know (orphans)", run: runImport},
		{name: "state", summary: "Inspect or edit the state (list, show, rm)", run: runState},
		{name: "force-unlock", summary: "Remove a stale state lock", run: runForceUnlock},
		{name: "version", summary: "Print the version", run: runVersion},
	}
}

// Globals are the options before the subcommand.
type Globals struct {
	Chdir string
	IO    IO
}

// Run runs one command line (without the program name).
func Run(ctx context.Context, args []string, io IO) int {
	g := &Globals{IO: io}
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
			fmt.Fprintf(io.Err, "Error: unknown global option %q\n\n", args[0])
			usage(io.Err)
			return 1
		}
		args = args[1:]
	}
	if len(args) == 0 {
		usage(io.Err)
		return 1
	}
	for _, c := range commands() {
		if c.name == args[0] {
			return c.run(ctx, g, args[1:])
		}
	}
	fmt.Fprintf(io.Err, "Error: unknown command %q\n\n", args[0])
	usage(io.Err)
	return 1
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "Usage: trialform [-chdir=DIR] <command> [options] [args]")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "trialform plans and runs hyperparameter-tuning experiments defined in *.hcl files.")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Commands:")
	for _, c := range commands() {
		if !c.hidden {
			fmt.Fprintf(w, "  %-13s %s\n", c.name, c.summary)
		}
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Run `trialform <command> -help` for a command's options. -flag and --flag are the same.")
}

// parseFlags parses flags that may come before, between or after the
// positional arguments (Go's flag package stops at the first positional).
func parseFlags(fs *flag.FlagSet, args []string, errw io.Writer) ([]string, bool) {
	fs.SetOutput(errw)
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, false
			}
			return nil, false
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, true
		}
		if rest[0] == "--" {
			return append(pos, rest[1:]...), true
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// multiFlag collects a repeatable string flag.
type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

func runVersion(ctx context.Context, g *Globals, args []string) int {
	fmt.Fprintf(g.IO.Out, "trialform v%s\n", Version)
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
