package pg

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/trialform/trialform/internal/pgtest"
)

// TestBenchCommands is `make bench`'s pg numbers of whole commands,
// beside the local backend's, with the trialform binary TRIALFORM_BIN and
// bench/genstate's GENSTATE_BIN: 1,000 trivial trials at concurrency 16
// (target: pg within 1.5x of local's wall time), and `trials -q ... -sort`
// over 10,000 trials (target under 300 ms). The pg working copy names the
// server through PG* variables, as a user's shell would; the server is
// durable (fsync on), as the local backend is.
func TestBenchCommands(t *testing.T) {
	bin, gen := os.Getenv("TRIALFORM_BIN"), os.Getenv("GENSTATE_BIN")
	if os.Getenv("TRIALFORM_PG_BENCH") == "" || bin == "" || gen == "" {
		t.Skip("set TRIALFORM_PG_BENCH=1, TRIALFORM_BIN and GENSTATE_BIN (make bench)")
	}
	// Durable, as local is: fsync and synchronous commits on.
	srv := pgtest.NewDurableServer(t)
	var env []string
	for k, v := range srv.Env(dbName(srv.NewDB(t))) {
		env = append(env, k+"="+v)
	}
	run := func(dir string, pg bool, args ...string) time.Duration {
		t.Helper()
		cmd := exec.Command(bin, append([]string{"-chdir=" + dir}, args...)...)
		cmd.Env = os.Environ()
		if pg {
			cmd.Env = append(cmd.Env, env...)
		}
		start := time.Now()
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s %v: %v\n%s", dir, args, err, out)
		}
		return time.Since(start)
	}
	const launch = `search_space "s" {
  param "x" { randint = [0, 1000000000] }
}
experiment "bench" {
  search_space = search_space.s
  tuner "random" {
    seed = 1
  }
  max_trials  = 1000
  concurrency = 16
  trial {
    command = "echo 'trialform: {\"default\": '${param.x}'}'"
  }
}
`
	fmt.Println("pg bench: 1,000 trivial trials at concurrency 16 (apply -wait; target pg <= 1.5x local)")
	walls := map[bool]time.Duration{}
	for _, pg := range []bool{false, true} {
		dir := t.TempDir()
		cfg := launch
		if pg {
			cfg = "backend \"pg\" {\n  schema_name = \"launch\"\n}\n\n" + cfg
		}
		if err := os.WriteFile(filepath.Join(dir, "main.hcl"), []byte(cfg), 0o644); err != nil {
			t.Fatal(err)
		}
		if pg {
			run(dir, true, "init")
		}
		walls[pg] = run(dir, pg, "apply", "-auto-approve", "-wait", "-parallelism", "16")
		cmd := exec.Command(bin, "-chdir="+dir, "trials", "bench", "-json")
		cmd.Env = append(os.Environ(), env...)
		out, err := cmd.Output()
		if err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(string(out), `"status": "SUCCEEDED"`); n != 1000 {
			t.Fatalf("pg=%v: %d trials SUCCEEDED, want 1000", pg, n)
		}
	}
	fmt.Printf("  local %s, pg %s: ratio %.2fx  load %s\n", walls[false].Round(10*time.Millisecond), walls[true].Round(10*time.Millisecond),
		float64(walls[true])/float64(walls[false]), loadavg())

	fmt.Println("pg bench: trials -q ... -sort over 10,000 trials (best of 5; target < 0.3 s)")
	dir := t.TempDir()
	if out, err := exec.Command(gen, "-n", "10000", "-dir", dir).CombinedOutput(); err != nil {
		t.Fatalf("genstate: %v\n%s", err, out)
	}
	query := []string{"trials", "big", "-q", "status:succeeded, params.opt:adam|sgd, metrics.loss:<=0.5, params.layers:2..6", "-sort", "-metrics.loss,params.lr", "-o", "csv"}
	best := func(pg bool) time.Duration {
		var b time.Duration
		for i := range 5 {
			if d := run(dir, pg, query...); i == 0 || d < b {
				b = d
			}
		}
		return b
	}
	local := best(false)
	main, err := os.ReadFile(filepath.Join(dir, "main.hcl"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "main.hcl"), append([]byte("backend \"pg\" {\n  schema_name = \"results\"\n}\n\n"), main...), 0o644); err != nil {
		t.Fatal(err)
	}
	migrate := run(dir, true, "init", "-migrate-state")
	pgq := best(true)
	fmt.Printf("  local %s, pg %s (init -migrate-state of the 10,000 trials took %s)  load %s\n", local.Round(time.Millisecond), pgq.Round(time.Millisecond), migrate.Round(10*time.Millisecond), loadavg())
}

func loadavg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return "?"
	}
	return f[0]
}
