package command_test

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/trialform/trialform/internal/testdeps"
	"github.com/trialform/trialform/providers/remote/sshtest"
)

// Each script's SSH lab (two sshd on 127.0.0.1 standing in for machines).
var (
	labsMu sync.Mutex
	labs   = map[*testscript.TestScript]*sshtest.Lab{}
)

// sshlab: starts two sshd servers ("a" and "b") for this script and sets
// TRIALFORM_VAR_port_a, _port_b, _user, _key, _known_hosts, _work_a and
// _work_b (the machines share this file system, so each has its own work
// dir under $WORK). Guard it with `[!sshd] skip`.
func cmdSSHLab(ts *testscript.TestScript, neg bool, args []string) {
	if why := sshtest.Available(); why != "" {
		ts.Fatalf("sshlab: %s", why)
	}
	lab, err := sshtest.NewLab(ts.MkAbs("sshlab"), 2)
	if err != nil {
		ts.Fatalf("sshlab: %v", err)
	}
	labsMu.Lock()
	labs[ts] = lab
	labsMu.Unlock()
	ts.Defer(func() {
		// Trials a failed script left running on the machines.
		sshtest.KillUnder(ts.Getenv("WORK"))
		lab.Close()
		labsMu.Lock()
		delete(labs, ts)
		labsMu.Unlock()
	})
	for _, s := range lab.Servers {
		ts.Setenv("TRIALFORM_VAR_port_"+s.Name, strconv.Itoa(s.Port))
		ts.Setenv("TRIALFORM_VAR_work_"+s.Name, filepath.Join(ts.Getenv("WORK"), "work-"+s.Name))
	}
	ts.Setenv("TRIALFORM_VAR_user", lab.User)
	ts.Setenv("TRIALFORM_VAR_key", lab.KeyFile)
	ts.Setenv("TRIALFORM_VAR_known_hosts", lab.KnownHosts)
}

// sshd stop|start|kill-trials NAME: makes machine NAME unreachable (its
// trial processes keep running), reachable again, or kills the trial
// processes the state places on it (with stop: a reboot).
func cmdSSHD(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 {
		ts.Fatalf("usage: sshd stop|start|kill-trials NAME")
	}
	labsMu.Lock()
	lab := labs[ts]
	labsMu.Unlock()
	if lab == nil {
		ts.Fatalf("sshd: run sshlab first")
	}
	s := lab.Server(args[1])
	if s == nil {
		ts.Fatalf("sshd: no server %q", args[1])
	}
	switch args[0] {
	case "stop":
		s.Stop()
	case "start":
		if err := s.Start(); err != nil {
			ts.Fatalf("sshd start: %v", err)
		}
	case "kill-trials":
		st, err := readState(ts)
		if err != nil {
			ts.Fatalf("sshd kill-trials: %v", err)
		}
		n := 0
		for exp, e := range st.Experiments {
			for id, t := range e.Trials {
				if t.Handle["machine"] == s.Addr() && t.Status == "RUNNING" {
					cmdKillTrial(ts, false, []string{exp, id})
					n++
				}
			}
		}
		if n == 0 {
			ts.Fatalf("sshd kill-trials: no running trial on %s", s.Addr())
		}
	default:
		ts.Fatalf("usage: sshd stop|start|kill-trials NAME")
	}
}

// scriptCondition adds [sshd]: real sshd servers can run here; [git]
// and [curl]: those programs are installed (scripts/deps.sh installs
// them).
func scriptCondition(cond string) (bool, error) {
	switch cond {
	case "git", "curl", "mkfifo":
		missing := ""
		if _, err := exec.LookPath(cond); err != nil {
			missing = fmt.Sprintf("no %s on PATH (`make deps` installs it)", cond)
		}
		return testdeps.Condition(cond, missing)
	case "sshd":
		return testdeps.Condition("sshd", sshtest.Available())
	case "sklearn":
		return testdeps.Condition("python3-sklearn", testdeps.PythonModules("/usr/bin/python3", "sklearn"))
	}
	return false, fmt.Errorf("unknown condition %q", cond)
}
