# Converted by `trialform convert nni` from config_hyperband.yml (NNI v2 schema).
# Fields trialform has no place for are listed as "not converted" comments.

search_space "config_hyperband" {
  nni_file = "search_space.json"
}

experiment "config_hyperband" {
  search_space    = search_space.config_hyperband
  max_trials      = 10000
  concurrency     = 2
  max_duration    = "100h"
  on_max_duration = "finish"
  objective {
    metric = "default"
    goal   = "maximize"
  }
  tuner "hyperband" {
    max_budget = 100
    eta        = 3
    # not converted: advisor.classArgs.exec_mode: the hyperband tuner has no such setting
  }
  trial {
    command = "python3 mnist.py"
    # NNI's trialGpuNumber (v1 gpuNum) 0 hides every GPU from the trial: an empty CUDA_VISIBLE_DEVICES
    env = {
      CUDA_VISIBLE_DEVICES = ""
    }
  }
}
