package command

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/trialform/trialform/schema"
)

func runValidate(ctx context.Context, g *Globals, args []string) int {
	var v varFlags
	fs := flag.NewFlagSet("validate", flag.ContinueOnError)
	v.register(fs)
	asJSON := fs.Bool("json", false, "print the result as JSON (diagnostics with ranges)")
	noColor := fs.Bool("no-color", false, "no colours")
	if _, ok := parseFlags(fs, args, g.IO.Err); !ok {
		return 1
	}
	wd, err := g.workDir()
	if err != nil {
		return g.errorf("%v", err)
	}
	cfg, diags := schema.Load(wd, schema.LoadOptions{Vars: v.vars, VarFiles: v.varFiles, Environ: g.IO.Environ})
	if *asJSON {
		enc := json.NewEncoder(g.IO.Out)
		enc.SetIndent("", "  ")
		enc.Encode(schema.DiagnosticsJSON(parsedFiles(cfg), diags))
		if diags.HasErrors() {
			return 1
		}
		return 0
	}
	if len(diags) > 0 {
		g.printDiags(cfg, diags, *noColor)
	}
	if diags.HasErrors() {
		return 1
	}
	fmt.Fprintf(g.IO.Out, "Success! The configuration is valid: %d experiment(s), %d search space(s), %d platform(s).\n",
		len(cfg.Experiments), len(cfg.Spaces), len(cfg.Platforms))
	return 0
}

func runFmt(ctx context.Context, g *Globals, args []string) int {
	fs := flag.NewFlagSet("fmt", flag.ContinueOnError)
	check := fs.Bool("check", false, "do not write; exit 3 if a file is not formatted")
	diff := fs.Bool("diff", false, "print a unified diff of the changes")
	list := fs.Bool("list", true, "print the names of files whose formatting changed")
	noColor := fs.Bool("no-color", false, "no colours")
	if _, ok := parseFlags(fs, args, g.IO.Err); !ok {
		return 1
	}
	wd, err := g.workDir()
	if err != nil {
		return g.errorf("%v", err)
	}
	results, diags := schema.FormatDir(wd)
	if diags.HasErrors() {
		g.printDiags(nil, diags, *noColor)
		return 1
	}
	changed := 0
	for _, r := range results {
		if !r.Changed {
			continue
		}
		changed++
		if *list {
			fmt.Fprintln(g.IO.Out, r.Name)
		}
		if *diff {
			fmt.Fprint(g.IO.Out, schema.UnifiedDiff(r.Name, r.Old, r.New))
		}
		if !*check {
			path := r.Name
			if !filepath.IsAbs(path) {
				path = filepath.Join(wd, path)
			}
			if err := os.WriteFile(path, r.New, 0o644); err != nil {
				return g.errorf("write %s: %v", r.Name, err)
			}
		}
	}
	if *check && changed > 0 {
		return 3
	}
	return 0
}
