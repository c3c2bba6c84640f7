# Converted by `trialform convert nni` from config_bohb.yml (NNI v2 schema).
# Fields trialform has no place for are listed as "not converted" comments.

search_space "config_bohb" {
  nni_file = "search_space.json"
}

experiment "config_bohb" {
  search_space    = search_space.config_bohb
  max_trials      = 1000
  concurrency     = 1
  max_duration    = "10h"
  on_max_duration = "finish"
  objective {
    metric = "default"
    goal   = "maximize"
  }
  tuner "bohb" {
    max_budget = 27
    min_budget = 1
    eta        = 3
  }
  trial {
    command = "python3 mnist.py"
    # NNI's trialGpuNumber (v1 gpuNum) 0 hides every GPU from the trial: an empty CUDA_VISIBLE_DEVICES
    env = {
      CUDA_VISIBLE_DEVICES = ""
    }
  }
}
