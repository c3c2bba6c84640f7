package local

import (
	"fmt"
	"path/filepath"

	"github.com/hashicorp/hcl/v2"

	"github.com/trialform/trialform/internal/decl"
	"github.com/trialform/trialform/providers"
	"github.com/trialform/trialform/providers/registry"
)

// TrialsDir is where, under the state directory, the local platform keeps
// its trial directories (TrialsDir/EXPERIMENT/TRIAL).
const TrialsDir = "trials"

// Settings is a platform "local" block.
type Settings struct {
	GPUIndices      []int `hcl:"gpu_indices,optional" type:"a list of GPU indices (whole numbers)" doc:"GPUs trials may be given, as nvidia-smi numbers them; unset: a trial with gpus > 0 gets them out of the GPUs found as NNI finds them (those of trialform's CUDA_VISIBLE_DEVICES if set, else every GPU nvidia-smi lists; none found: plan fails), and a trial with gpus = 0 sees CUDA_VISIBLE_DEVICES unchanged"`
	MaxTrialsPerGPU int   `hcl:"max_trials_per_gpu,optional" min:"1" doc:"how many trials may share one GPU (default 1)"`
}

// Check refuses negative and repeated GPU indices.
func (s *Settings) Check(w *decl.Where) hcl.Diagnostics {
	seen := map[int]bool{}
	for _, g := range s.GPUIndices {
		if g < 0 {
			return hcl.Diagnostics{w.Error("gpu_indices", "Invalid value", "gpu_indices must hold whole numbers >= 0 (GPU indices as nvidia-smi shows them).")}
		}
		if seen[g] {
			return hcl.Diagnostics{w.Error("gpu_indices", "Invalid value", "gpu_indices lists GPU %d twice.", g)}
		}
		seen[g] = true
	}
	return nil
}

// Registration is the local kind's entry in the platform registry.
func Registration() registry.Kind {
	return registry.Kind{
		Name:    "local",
		Summary: "processes on this machine (the implicit platform local.default when an experiment names none)",
		Config:  func() any { return &Settings{MaxTrialsPerGPU: 1} },
		New: func(cfg any, env registry.Env) (providers.Provider, error) {
			s, ok := cfg.(*Settings)
			if !ok {
				return nil, fmt.Errorf("local platform: configuration %T", cfg)
			}
			return New(Config{
				Root:   filepath.Join(env.StateDir, TrialsDir),
				LibDir: filepath.Join(env.StateDir, "lib"),
				// One tree for every local trial: .trialform/tensorboard/EXP/TRIAL.
				TensorBoardRoot: filepath.Join(env.StateDir, "tensorboard"),
				GPUIndices:      s.GPUIndices,
				MaxTrialsPerGPU: s.MaxTrialsPerGPU,
			})
		},
	}
}
