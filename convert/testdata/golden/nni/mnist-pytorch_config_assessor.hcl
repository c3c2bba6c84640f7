# Converted by `trialform convert nni` from config_assessor.yml (NNI v2 schema).
# Fields trialform has no place for are listed as "not converted" comments.

search_space "config_assessor" {
  nni_file = "search_space.json"
}

experiment "config_assessor" {
  search_space = search_space.config_assessor
  max_trials   = 20
  concurrency  = 4
  objective {
    metric = "default"
    goal   = "maximize"
  }
  tuner "tpe" {
    multivariate = false
  }
  assessor "curvefitting" {
    epoch_num = 20
    threshold = 0.9
  }
  trial {
    command = "python3 mnist.py"
    # NNI's trialGpuNumber (v1 gpuNum) 0 hides every GPU from the trial: an empty CUDA_VISIBLE_DEVICES
    env = {
      CUDA_VISIBLE_DEVICES = ""
    }
  }
}
