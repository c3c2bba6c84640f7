package command_test

import (
	"bufio"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/rogpeppe/go-internal/testscript"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// schemaPath is docs/json/NAME in the repository.
func schemaPath(name string) string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "docs", "json", name)
}

// jsonschema [-lines] SCHEMA FILE: FILE (every line of it, with -lines)
// validates against docs/json/SCHEMA. With !, it must not.
func cmdJSONSchema(ts *testscript.TestScript, neg bool, args []string) {
	lines := len(args) > 0 && args[0] == "-lines"
	if lines {
		args = args[1:]
	}
	if len(args) != 2 {
		ts.Fatalf("usage: jsonschema [-lines] SCHEMA FILE")
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	sch, err := c.Compile(schemaPath(args[0]))
	if err != nil {
		ts.Fatalf("jsonschema: compile %s: %v", args[0], err)
	}
	text := ts.ReadFile(args[1])
	docs := []string{text}
	if lines {
		docs = nil
		sc := bufio.NewScanner(strings.NewReader(text))
		sc.Buffer(make([]byte, 1<<20), 1<<24)
		for sc.Scan() {
			docs = append(docs, sc.Text())
		}
		if len(docs) == 0 {
			ts.Fatalf("jsonschema: %s is empty", args[1])
		}
	}
	var bad error
	for i, d := range docs {
		inst, err := jsonschema.UnmarshalJSON(strings.NewReader(d))
		if err == nil {
			err = sch.Validate(inst)
		}
		if err != nil {
			if !neg {
				ts.Fatalf("jsonschema: %s (document %d) does not validate against %s: %v\n%s", args[1], i+1, args[0], err, d)
			}
			bad = err
		}
	}
	if neg && bad == nil {
		ts.Fatalf("jsonschema: %s validates against %s", args[1], args[0])
	}
}
