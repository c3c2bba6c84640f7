package views

import (
	"fmt"
	"io"
	"strings"
)

// The output of help, -help, the usage and the usage errors of every
// command (a bad flag, too many or too few arguments, an unknown
// command), and version.

// HelpPage is one command's help: what `trialform CMD -help` prints.
type HelpPage struct {
	Synopsis string // "trialform plan [options]"
	Desc     string // paragraphs, indented by two spaces when shown
	Args     []HelpItem
	Flags    []HelpItem // in the order shown; -help is added at the end
	Example  string
}

// HelpItem is an argument or a flag: its name (or synopsis, "-out=FILE")
// and what it does, filled to 80 columns when shown.
type HelpItem struct{ Name, What string }

// Help writes p.
func Help(w io.Writer, p HelpPage) {
	fmt.Fprintf(w, "Usage: %s\n\n", p.Synopsis)
	if p.Desc != "" {
		fmt.Fprintln(w, indentText(p.Desc, "  "))
		fmt.Fprintln(w)
	}
	if len(p.Args) > 0 {
		fmt.Fprintln(w, "Arguments:")
		fmt.Fprintln(w)
		for _, a := range p.Args {
			fmt.Fprintf(w, "  %s\n%s\n", a.Name, wrap(a.What, "      ", 80))
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w, "Options:")
	fmt.Fprintln(w)
	for _, f := range p.Flags {
		fmt.Fprintf(w, "  %s\n%s\n", f.Name, wrap(f.What, "      ", 80))
	}
	fmt.Fprintf(w, "  -help\n      print this help\n\n")
	if p.Example != "" {
		fmt.Fprintln(w, "Example:")
		fmt.Fprintln(w)
		fmt.Fprintf(w, "  %s\n", p.Example)
	}
}

func indentText(s, ind string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		if l != "" {
			lines[i] = ind + l
		}
	}
	return strings.Join(lines, "\n")
}

// wrap fills s into lines of at most width columns after ind.
func wrap(s, ind string, width int) string {
	var lines []string
	line := ""
	for _, word := range strings.Fields(s) {
		if line != "" && len(ind)+len(line)+1+len(word) > width {
			lines = append(lines, ind+line)
			line = ""
		}
		if line != "" {
			line += " "
		}
		line += word
	}
	if line != "" {
		lines = append(lines, ind+line)
	}
	return strings.Join(lines, "\n")
}

// Command is one line of the usage: a command and its summary.
type Command struct{ Name, Summary string }

// Usage is `trialform -help`: the commands people may run.
func Usage(w io.Writer, commands []Command) {
	fmt.Fprintln(w, "Usage: trialform [-chdir=DIR] <command> [options] [args]")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "trialform plans and runs hyperparameter-tuning experiments defined in *.hcl files.")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Commands:")
	for _, c := range commands {
		fmt.Fprintf(w, "  %-13s %s\n", c.Name, c.Summary)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Run `trialform <command> -help` or `trialform help <command>` for a command's usage. -flag and --flag are the same.")
}

// UnknownGlobalOption: an option before the command that is none; the
// usage follows.
func UnknownGlobalOption(w io.Writer, opt string, commands []Command) {
	fmt.Fprintf(w, "Error: unknown global option %q\n\n", opt)
	Usage(w, commands)
}

// UnknownCommand says that name is no command; hint (" Did you mean
// ...?") names the closest one, and without one the usage follows.
func UnknownCommand(w io.Writer, name, hint string, commands []Command) {
	if hint != "" {
		fmt.Fprintf(w, "Error: unknown command %q.%s\n\nRun `trialform -help` for the list of commands.\n", name, hint)
		return
	}
	fmt.Fprintf(w, "Error: unknown command %q\n\n", name)
	Usage(w, commands)
}

// FlagError: the command's flags could not be parsed.
func FlagError(w io.Writer, err error, command string) {
	fmt.Fprintf(w, "Error: %v\n\nRun `trialform %s -help` for its options.\n", err, command)
}

// TooManyArguments: extra (quoted) are more arguments than the command
// takes; hint ("" : none) says what to do.
func TooManyArguments(w io.Writer, extra, hint, synopsis, command string) {
	fmt.Fprintf(w, "Error: Too many command line arguments: %s\n\n", extra)
	argumentsHint(w, hint, synopsis, command)
}

// NotEnoughArguments: the command needs more arguments.
func NotEnoughArguments(w io.Writer, hint, synopsis, command string) {
	fmt.Fprintf(w, "Error: Not enough command line arguments\n\n")
	argumentsHint(w, hint, synopsis, command)
}

func argumentsHint(w io.Writer, hint, synopsis, command string) {
	if hint != "" {
		fmt.Fprintf(w, "%s\n\n", hint)
	}
	fmt.Fprintf(w, "Usage: %s\nRun `trialform %s -help` for more.\n", synopsis, command)
}

// Version is version's line.
func Version(w io.Writer, version string) { fmt.Fprintf(w, "trialform v%s\n", version) }
