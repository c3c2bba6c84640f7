package command

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/trialform/trialform/internal/views"
	"github.com/trialform/trialform/providers"
	"github.com/trialform/trialform/state"
)

// runTensorBoard is `trialform tensorboard EXPERIMENT [TRIAL...]`: it
// brings remote trials' TensorBoard logs into the local tree
// (.trialform/tensorboard/EXPERIMENT/TRIAL, where local trials write
// directly), then runs the `tensorboard` on PATH on it until Ctrl-C,
// syncing again every -sync-interval. Without TensorBoard it prints the
// logdir and how to install it.
func runTensorBoard(ctx context.Context, g *Globals, args []string) int {
	fs := flag.NewFlagSet("tensorboard", flag.ContinueOnError)
	port := fs.Int("port", 6006, "TensorBoard's port")
	host := fs.String("host", "localhost", "TensorBoard's bind address")
	printLogdir := fs.Bool("print-logdir", false, "only print the logdir (after syncing remote trials)")
	interval := fs.Duration("sync-interval", 30*time.Second, "how often remote trials are synced again while TensorBoard runs")
	limit := fs.Int64("sync-limit", providers.DefaultSyncLimit>>30, "the most GiB of one remote trial's logs copied here; past it, what fits is copied and a warning says so")
	pos, code, ok := g.parse(fs, args, argSpec{min: 1, max: -1, hint: "tensorboard takes an experiment and optionally trial ids: trialform tensorboard EXPERIMENT [TRIAL...]"})
	if !ok {
		return code
	}
	if len(pos) == 0 {
		return g.errorf("usage: trialform tensorboard EXPERIMENT [TRIAL...] [-port 6006] [-print-logdir]")
	}
	if *limit <= 0 || *limit > 1<<20 {
		return g.errorf("-sync-limit %d: give a number of GiB (1 to 1048576)", *limit)
	}
	if *port <= 0 || *port > 65535 {
		return g.errorf("-port %d: give a TCP port (1-65535)", *port)
	}
	sd, m, ok := g.openBackend(nil)
	if !ok {
		return 1
	}
	st := g.loadState(m)
	if st == nil {
		return 1
	}
	e := st.Experiment(strings.TrimPrefix(pos[0], "experiment."))
	if e == nil {
		return g.errorf("no experiment %q in the state (experiments: %s)", pos[0], g.orNoneList(sortedKeys(st.Experiments)))
	}
	var trials []*state.Trial
	if len(pos) > 1 {
		for _, id := range pos[1:] {
			t := e.Trials[id]
			if t == nil {
				return g.errorf("experiment %q has no trial %q (see `trialform trials %s`)", e.Name, id, e.Name)
			}
			trials = append(trials, t)
		}
	} else {
		trials = e.SortedTrials()
	}
	// The logs are under the name the experiment's trials carry on their
	// platform, which `state mv` keeps (OnPlatform).
	root := filepath.Join(sd, "tensorboard")
	expDir := filepath.Join(root, e.OnPlatform())
	if err := os.MkdirAll(expDir, 0o755); err != nil {
		return g.errorf("%v", err)
	}

	// Remote platforms: copy the logs over SFTP (incrementally).
	var syncer providers.TensorBoardSyncer
	kind, _, _ := strings.Cut(e.Platform, ".")
	if kind != "local" {
		ps := newProviderSet(nil, sd)
		if cfg := g.loadConfigQuiet(); cfg != nil {
			ps = newProviderSet(cfg, sd)
		}
		defer ps.Close()
		if p, err := ps.Provider(e.Platform); err == nil {
			syncer, _ = p.(providers.TensorBoardSyncer)
		}
		if syncer == nil {
			views.TensorBoardNoSync(g.IO.Err, e.Platform)
		}
	}
	sync := func() {
		if syncer == nil {
			return
		}
		var total providers.SyncStats
		for _, t := range trials {
			if t.StartedAt == nil {
				continue
			}
			s, err := syncer.SyncTensorBoard(ctx, providers.SyncRequest{
				Experiment: e.OnPlatform(), TrialID: t.ID, Handle: providers.Handle(t.Handle), Dest: filepath.Join(expDir, t.ID),
				MaxBytes: *limit << 30,
			})
			if err != nil {
				if ctx.Err() == nil {
					views.TensorBoardSyncFailed(g.IO.Err, e.Name, t.ID, err)
				}
				continue
			}
			total.Files += s.Files
			total.Bytes += s.Bytes
		}
		views.TensorBoardSynced(g.IO.Err, e.Platform, total.Files, total.Bytes)
	}
	sync()

	// The logdir: the experiment's tree, or a spec naming each trial.
	logFlag, logdir := "--logdir", expDir
	if len(pos) > 1 {
		parts := make([]string, len(trials))
		for i, t := range trials {
			parts[i] = t.ID + ":" + filepath.Join(expDir, t.ID)
		}
		logFlag, logdir = "--logdir_spec", strings.Join(parts, ",")
	}
	if *printLogdir {
		views.Lines(g.IO.Out, logdir)
		return 0
	}
	bin, err := exec.LookPath("tensorboard")
	if err != nil {
		views.TensorBoardMissing(g.IO.Err, e.Name, logFlag, logdir)
		views.Lines(g.IO.Out, logdir)
		return 1
	}
	cmd := exec.Command(bin, logFlag, logdir, "--port", fmt.Sprint(*port), "--host", *host)
	cmd.Stdout, cmd.Stderr = g.IO.Err, g.IO.Err
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return g.errorf("start TensorBoard: %v", err)
	}
	views.TensorBoardServing(g.IO.Out, *host, *port, logdir)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	tick := time.NewTicker(*interval)
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			if err != nil {
				return g.errorf("TensorBoard exited: %v", err)
			}
			return 0
		case <-tick.C:
			sync()
		case <-ctx.Done():
			// Stop TensorBoard's whole process group, gently first.
			syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
			select {
			case <-done:
			case <-time.After(5 * time.Second):
				syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
				<-done
			}
			views.TensorBoardStopped(g.IO.Err)
			return 0
		}
	}
}
