package local

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// GPUs NNI's local training service gives trials when gpuIndices is unset:
// every GPU of the machine. A local platform without gpu_indices finds
// them the same way the first time a trial asks for GPUs: the GPUs of
// trialform's own CUDA_VISIBLE_DEVICES when it is set, else those
// nvidia-smi lists. Trials asking for none are left as they are (their
// CUDA_VISIBLE_DEVICES unchanged).

// detectGPUs returns the GPU indices found, and where they were found.
func detectGPUs() ([]int, string, error) {
	if v, ok := os.LookupEnv("CUDA_VISIBLE_DEVICES"); ok {
		var out []int
		for _, f := range strings.Split(v, ",") {
			f = strings.TrimSpace(f)
			if f == "" {
				continue
			}
			i, err := strconv.Atoi(f)
			if err != nil {
				return nil, "", fmt.Errorf("trialform's CUDA_VISIBLE_DEVICES=%q names a GPU as %q, not by its index", v, f)
			}
			if i < 0 { // CUDA ignores the devices from an invalid one on
				break
			}
			out = append(out, i)
		}
		return out, fmt.Sprintf("trialform's CUDA_VISIBLE_DEVICES=%q", v), nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "nvidia-smi", "--query-gpu=index", "--format=csv,noheader").Output()
	if errors.Is(err, exec.ErrNotFound) {
		return nil, "nvidia-smi is not on PATH", nil
	}
	if err != nil {
		msg := err.Error()
		var ee *exec.ExitError
		if errors.As(err, &ee) && len(strings.TrimSpace(string(ee.Stderr))) > 0 {
			msg = strings.TrimSpace(string(ee.Stderr))
		}
		return nil, "", fmt.Errorf("nvidia-smi --query-gpu=index: %s", msg)
	}
	var idx []int
	for _, line := range strings.Split(string(out), "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		i, err := strconv.Atoi(line)
		if err != nil || i < 0 {
			return nil, "", fmt.Errorf("nvidia-smi --query-gpu=index printed %q, not a GPU index", line)
		}
		idx = append(idx, i)
	}
	return idx, "nvidia-smi", nil
}

// gpuIndices are the GPUs a trial asking for want GPUs is scheduled on:
// gpu_indices, else (want > 0) the GPUs found on the machine. None: no
// scheduling (the trial's CUDA_VISIBLE_DEVICES is left as it is).
func (l *Local) gpuIndices(want int) ([]int, error) {
	if len(l.cfg.GPUIndices) > 0 || want == 0 {
		return l.cfg.GPUIndices, nil
	}
	l.detectOnce.Do(func() {
		var from string
		l.detected, from, l.detectErr = detectGPUs()
		if l.detectErr == nil && len(l.detected) == 0 {
			l.detectErr = fmt.Errorf("gpu_indices is unset and no GPU was found (%s)", from)
		}
		l.detectedFrom = from
	})
	if l.detectErr != nil {
		return nil, l.detectErr
	}
	return l.detected, nil
}

// CheckGPUs says whether a trial asking for n GPUs can ever be given them
// (providers.GPUChecker): plan refuses an experiment it cannot run.
// With gpu_indices set it says nothing: a trial asking for more than it
// lists fails to start, as it always did.
func (l *Local) CheckGPUs(n int) error {
	if n <= 0 || len(l.cfg.GPUIndices) > 0 {
		return nil
	}
	idx, err := l.gpuIndices(n)
	if err != nil {
		return fmt.Errorf("trials ask for GPUs (gpus = %d) but %v; set gpu_indices in the local platform block to the GPUs trials may use (NNI's gpuIndices), or gpus = 0", n, err)
	}
	if n > len(idx) {
		return fmt.Errorf("trials ask for %d GPUs (gpus) but the machine has %d (%v, found by %s, gpu_indices being unset)", n, len(idx), idx, l.detectedFrom)
	}
	return nil
}
