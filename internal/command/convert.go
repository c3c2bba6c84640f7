package command

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/trialform/trialform/convert"
	"github.com/trialform/trialform/internal/fsread"
	"github.com/trialform/trialform/internal/views"
)

// convertOptions are the flags and arguments of convert.
type convertOptions struct {
	tool   string // nni, katib, polyaxon
	input  string
	output string // "" = stdout
	inline bool
	force  bool
}

var converters = map[string]func([]byte, convert.Options) (*convert.Result, error){
	"nni":      convert.NNI,
	"katib":    convert.Katib,
	"polyaxon": convert.Polyaxon,
}

func runConvert(ctx context.Context, g *Globals, args []string) int {
	fs := flag.NewFlagSet("convert", flag.ContinueOnError)
	var o convertOptions
	fs.StringVar(&o.output, "o", "", "write the HCL to this file instead of stdout")
	fs.BoolVar(&o.inline, "inline", false, "write the NNI search space file as HCL param blocks instead of nni_file")
	fs.BoolVar(&o.force, "force", false, "overwrite the -o file if it exists")
	pos, code, ok := g.parse(fs, args, argSpec{min: 2, max: 2, hint: "convert takes the tool (nni, katib or polyaxon) and one file: trialform convert nni config.yml -o main.hcl"})
	if !ok {
		return code
	}
	o.tool, o.input = pos[0], pos[1]
	if _, ok := converters[o.tool]; !ok {
		return g.errorf("convert %q: convert reads nni (config.yml), katib (an Experiment) or polyaxon (a polyaxonfile)", o.tool)
	}
	return g.convert(o)
}

func (g *Globals) convert(o convertOptions) int {
	wd, err := g.workDir()
	if err != nil {
		return g.errorf("%v", err)
	}
	abs := func(p string) string {
		if filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(wd, p)
	}
	in := abs(o.input)
	data, err := readConvertInput(in, o.input)
	if err != nil {
		return g.errorf("%v", err)
	}
	outDir := wd
	if o.output != "" {
		outDir = filepath.Dir(abs(o.output))
	}
	base, err := filepath.Rel(outDir, filepath.Dir(in))
	if err != nil {
		base = filepath.Dir(in)
	}
	inDir := filepath.Dir(in)
	res, err := converters[o.tool](data, convert.Options{
		Filename: o.input,
		BaseDir:  filepath.ToSlash(base),
		Inline:   o.inline,
		ReadFile: func(rel string) ([]byte, error) {
			p := rel
			if !filepath.IsAbs(p) {
				p = filepath.Join(inDir, rel)
			}
			return readConvertInput(p, rel)
		},
	})
	var cerr *convert.Error
	if errors.As(err, &cerr) {
		return g.errorf("%s", cerr.Error())
	}
	if err != nil {
		return g.errorf("convert %s: %v", o.input, err)
	}
	for _, w := range res.Warnings {
		views.Warning(g.IO.Err, w.String())
	}
	if o.output == "" {
		views.Text(g.IO.Out, string(res.HCL))
		return 0
	}
	out := abs(o.output)
	if _, err := os.Stat(out); err == nil && !o.force {
		return g.errorf("%s exists; choose another -o file or add -force to overwrite it", o.output)
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return g.errorf("%v", err)
	}
	if err := os.WriteFile(out, res.HCL, 0o644); err != nil {
		return g.errorf("write %s: %v", o.output, err)
	}
	views.Converted(g.IO.Err, o.output, len(res.Warnings))
	return 0
}

// readConvertInput reads a file convert is given or that the definition
// names (a search space, a Polyaxon pathRef): a regular file of at most
// fsread.MaxConfig bytes, so a FIFO, /dev/zero or a huge file is refused
// instead of blocking or exhausting memory. name is the path as the user
// wrote it.
func readConvertInput(path, name string) ([]byte, error) {
	data, err := fsread.ReadFile(path, fsread.MaxConfig)
	switch {
	case err == nil:
		return data, nil
	case fsread.IsRefused(err):
		// fsread's message names the path it was given; name the one the
		// user wrote.
		var tl *fsread.TooLargeError
		var nr *fsread.NotRegularError
		if errors.As(err, &tl) {
			tl.Path = name
		} else if errors.As(err, &nr) {
			nr.Path = name
		}
		return nil, fmt.Errorf("%v: convert reads configuration files only", err)
	}
	var pe *os.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return nil, fmt.Errorf("read %s: %v", name, err)
}
