package schema

import (
	"strings"
	"testing"
)

// A choice value that makes the trial's command line (sh -c's one
// argument) or one item of args longer than Linux accepts in one argument
// is a validate error at the param: the trial failed to start with
// "argument list too long". The same value used nowhere on the command
// line is fine (the trial reads it from parameter.cfg), and Render refuses
// it too (a plan with values validate did not see).
func TestChoiceTooLongForOneArgument(t *testing.T) {
	long := strings.Repeat("a", MaxArgLen)
	for _, c := range []struct{ name, trial string }{
		{"command", `command = "python3 t.py --text ${param.text}"`},
		{"args", `args = ["python3", "t.py", "--text=${param.text}"]`},
	} {
		src := `search_space "s" {
  param "text" { choice = ["short", "` + long + `"] }
}
experiment "e" {
  search_space = search_space.s
  max_trials   = 1
  trial {
    ` + c.trial + `
  }
}
`
		_, diags := loadSrc(t, src)
		got := strings.Join(diags, "\n")
		if !strings.Contains(got, "main.hcl:8") || !strings.Contains(got, `Parameter value too long: a choice value of param "text"`) {
			t.Errorf("%s: diagnostics %.400q", c.name, got)
		}
	}
	// Not on the command line: fine.
	src := `search_space "s" {
  param "text" { choice = ["short", "` + long + `"] }
}
experiment "e" {
  search_space = search_space.s
  max_trials   = 1
  trial {
    command = "python3 t.py"
  }
}
`
	if _, diags := loadSrc(t, src); len(diags) != 0 {
		t.Errorf("a long value off the command line: %.400q", diags)
	}
	tpl := &Template{Segments: []Segment{{Literal: "echo "}, {Param: "text"}}}
	if _, err := tpl.Render(map[string]any{"text": long}, true); err == nil || !strings.Contains(err.Error(), `param "text"`) {
		t.Errorf("Render of a too long command line: %v", err)
	}
	if _, err := tpl.Render(map[string]any{"text": "short"}, true); err != nil {
		t.Errorf("Render: %v", err)
	}
}
