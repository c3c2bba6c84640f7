package command

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/hashicorp/hcl/v2"

	"github.com/trialform/trialform/internal/fsread"
	"github.com/trialform/trialform/internal/views"
	"github.com/trialform/trialform/schema"
)

func runValidate(ctx context.Context, g *Globals, args []string) int {
	var v varFlags
	fs := flag.NewFlagSet("validate", flag.ContinueOnError)
	v.register(fs)
	asJSON := fs.Bool("json", false, "print the result as JSON (diagnostics with ranges)")
	noColor := fs.Bool("no-color", false, "no colours")
	if _, code, ok := g.parse(fs, args, argSpec{hint: "validate takes no arguments: to validate another directory, run trialform -chdir=DIR validate."}); !ok {
		return code
	}
	wd, err := g.workDir()
	if err != nil {
		return g.errorf("%v", err)
	}
	cfg, diags := schema.Load(wd, schema.LoadOptions{Platforms: platformRegistry, Tuners: tunerRegistry, Backends: schemaBackends(), Vars: v.vars, VarFiles: v.varFiles, Environ: g.IO.Environ, UnknownVariables: true})
	if *asJSON {
		views.JSONDocument(g.IO.Out, schema.DiagnosticsJSON(parsedFiles(cfg), diags))
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
	unknown := ""
	if len(cfg.UnknownVars) > 0 {
		unknown = joinVarNames(cfg.UnknownVars)
	}
	// An experiment runs on the built-in local.default (the only platform
	// when none is declared).
	builtin := cfg.Declared.ImplicitLocal && cfg.Declared.Platforms == 0
	for _, e := range cfg.Experiments {
		builtin = builtin || cfg.Declared.ImplicitLocal && e.Platform != nil && e.Platform.Key() == "local.default"
	}
	views.Valid(g.IO.Out, cfg.Declared.Experiments, cfg.Declared.Spaces, cfg.Declared.Platforms, builtin, unknown, len(cfg.UnknownVars))
	return 0
}

func runFmt(ctx context.Context, g *Globals, args []string) int {
	fs := flag.NewFlagSet("fmt", flag.ContinueOnError)
	check := fs.Bool("check", false, "do not write; exit 3 if a file is not formatted")
	diff := fs.Bool("diff", false, "print a unified diff of the changes")
	list := fs.Bool("list", true, "print the names of files whose formatting changed")
	noColor := fs.Bool("no-color", false, "no colours")
	targets, code, ok := g.parse(fs, args, argSpec{max: -1})
	if !ok {
		return code
	}
	wd, err := g.workDir()
	if err != nil {
		return g.errorf("%v", err)
	}
	if len(targets) == 0 {
		targets = []string{""}
	}
	changed, failed := 0, false
	for _, t := range targets {
		if t == "-" {
			src, err := io.ReadAll(io.LimitReader(g.IO.In, maxFmtInput+1))
			if err != nil {
				return g.errorf("read standard input: %v", err)
			}
			if len(src) > maxFmtInput {
				return g.errorf("standard input: more than %d bytes; fmt formats HCL files up to that size", maxFmtInput)
			}
			r, diags := schema.FormatBytes("<stdin>", src)
			if diags.HasErrors() {
				g.printDiags(&schema.Config{Files: map[string][]byte{"<stdin>": src}}, diags, *noColor)
				failed = true
				continue
			}
			if r.Changed {
				changed++
			}
			if *diff {
				views.Text(g.IO.Out, schema.UnifiedDiff(r.Name, r.Old, r.New))
			} else if !*check {
				views.Text(g.IO.Out, string(r.New))
			}
			continue
		}
		results, diags, srcs := fmtTarget(wd, t)
		if diags.HasErrors() {
			g.printDiags(&schema.Config{Files: srcs}, diags, *noColor)
			failed = true
		}
		for _, r := range results {
			if !r.Changed {
				continue
			}
			changed++
			if *list {
				views.Lines(g.IO.Out, r.Name)
			}
			if *diff {
				views.Text(g.IO.Out, schema.UnifiedDiff(r.Name, r.Old, r.New))
			}
			if !*check {
				if err := writeFormatted(r.Path, r.New); err != nil {
					return g.errorf("write %s: %v", r.Name, err)
				}
			}
		}
	}
	if failed {
		return 1
	}
	if *check && changed > 0 {
		return 3
	}
	return 0
}

// maxFmtInput is the largest file fmt reads (HCL configurations are small).
const maxFmtInput = 16 << 20

// fmtTarget formats target ("" for the working directory): a directory's
// *.hcl files, or one file. Results are named as the user wrote target.
// fmtTarget formats a file or a directory's *.hcl files in memory; srcs
// holds the sources of the files with errors, for the snippets.
func fmtTarget(wd, target string) (results []schema.FormatResult, diags hcl.Diagnostics, srcs map[string][]byte) {
	path := target
	if path == "" {
		path = wd
	} else if !filepath.IsAbs(path) {
		path = filepath.Join(wd, path)
	}
	st, err := os.Stat(path)
	if err != nil {
		return nil, hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "No such file or directory",
			Detail: fmt.Sprintf("fmt %s: %v. Give *.hcl files or directories.", target, err)}}, nil
	}
	if st.IsDir() {
		results, diags := schema.FormatDir(path)
		if target != "" {
			for i := range results {
				results[i].Name = filepath.Join(target, results[i].Name)
			}
		}
		srcs := map[string][]byte{}
		for _, d := range diags {
			if d.Subject != nil {
				if b, err := fsread.ReadFile(filepath.Join(path, d.Subject.Filename), maxFmtInput); err == nil {
					srcs[d.Subject.Filename] = b
				}
			}
		}
		return results, diags, srcs
	}
	if !st.Mode().IsRegular() {
		return nil, hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Not a regular file",
			Detail: fmt.Sprintf("fmt %s: not a regular file or directory.", target)}}, nil
	}
	if ext := filepath.Ext(path); ext != ".hcl" && ext != ".tfvars" {
		// As terraform fmt, which takes .tf, .tfvars and .tftest.hcl only:
		// notes.txt is not rewritten. Var files are HCL, named *.tfvars.
		return nil, hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Not an HCL file",
			Detail: fmt.Sprintf("fmt %s: not a *.hcl file: fmt formats *.hcl files and -var-files (*.tfvars); give one of those or a directory.", target)}}, nil
	}
	if st.Size() > maxFmtInput {
		return nil, hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "File too large",
			Detail: fmt.Sprintf("fmt %s: %d bytes; fmt formats HCL files up to %d bytes.", target, st.Size(), maxFmtInput)}}, nil
	}
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Cannot read file", Detail: fmt.Sprintf("fmt %s: %v.", target, err)}}, nil
	}
	r, diags := schema.FormatBytes(target, src)
	if diags.HasErrors() {
		return nil, diags, map[string][]byte{target: src}
	}
	r.Path = path
	return []schema.FormatResult{r}, nil, nil
}

// writeFormatted replaces path's content, keeping its mode.
func writeFormatted(path string, b []byte) error {
	mode := os.FileMode(0o644)
	if st, err := os.Stat(path); err == nil {
		mode = st.Mode().Perm()
	}
	return os.WriteFile(path, b, mode)
}

// joinVarNames is "var.a, var.b and var.c".
func joinVarNames(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = "var." + n
	}
	if len(q) == 1 {
		return q[0]
	}
	return strings.Join(q[:len(q)-1], ", ") + " and " + q[len(q)-1]
}
