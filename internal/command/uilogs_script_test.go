package command_test

import (
	"context"
	"os"
	"strings"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/trialform/trialform/internal/command"
)

// uilogs EXP TRIAL FILE: write what the dashboard's log stream shows of a
// trial to FILE, with the script's environment (its TRIALFORM_VAR_*).
func cmdUILogs(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 {
		ts.Fatalf("usage: uilogs EXP TRIAL FILE")
	}
	ts.Check(ts.Exec("env"))
	environ := strings.Split(strings.TrimRight(ts.ReadFile("stdout"), "\n"), "\n")
	f, err := os.Create(ts.MkAbs(args[2]))
	ts.Check(err)
	defer f.Close()
	ts.Check(command.UILogs(context.Background(), ts.MkAbs("."), environ, args[0], args[1], f))
}
