# Converted by `trialform convert nni` from config_smac.yml (NNI v2 schema).
# Fields trialform has no place for are listed as "not converted" comments.

search_space "auto_rocksdb_SMAC" {
  nni_file = "search_space.json"
}

experiment "auto_rocksdb_SMAC" {
  search_space    = search_space.auto_rocksdb_SMAC
  max_trials      = 256
  concurrency     = 1
  max_duration    = "24h"
  on_max_duration = "finish"
  objective {
    metric = "default"
    goal   = "maximize"
  }
  tuner "smac" {}
  trial {
    command  = "python3 main.py"
    code_dir = "."
    # NNI's trialGpuNumber (v1 gpuNum) 0 hides every GPU from the trial: an empty CUDA_VISIBLE_DEVICES
    env = {
      CUDA_VISIBLE_DEVICES = ""
    }
  }
  # not converted: trainingService.useActiveGpu: trialform schedules on the listed GPUs whether or not a display uses them
}
