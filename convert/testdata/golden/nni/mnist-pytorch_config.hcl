# Converted by `trialform convert nni` from config.yml (NNI v2 schema).
# Fields trialform has no place for are listed as "not converted" comments.

search_space "config" {
  nni_file = "search_space.json"
}

experiment "config" {
  search_space = search_space.config
  max_trials   = 100
  # NNI's config set no trial limit; trialform needs one: adjust max_trials
  concurrency = 1
  objective {
    metric = "default"
    goal   = "maximize"
  }
  tuner "tpe" {
    multivariate = false
  }
  trial {
    command = "python3 mnist.py"
    # NNI's trialGpuNumber (v1 gpuNum) 0 hides every GPU from the trial: an empty CUDA_VISIBLE_DEVICES
    env = {
      CUDA_VISIBLE_DEVICES = ""
    }
  }
}
