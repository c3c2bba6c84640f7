# Converted by `trialform convert nni` from config.yml (NNI v1 schema).
# Fields trialform has no place for are listed as "not converted" comments.

search_space "example_mnist-keras" {
  nni_file = "search_space.json"
}

experiment "example_mnist-keras" {
  search_space    = search_space.example_mnist-keras
  max_trials      = 10
  concurrency     = 1
  max_duration    = "1h"
  on_max_duration = "finish"
  objective {
    metric = "default"
    goal   = "maximize"
  }
  tuner "tpe" {
    multivariate = false
  }
  trial {
    command  = "python3 mnist-keras.py"
    code_dir = "."
    # NNI's trialGpuNumber (v1 gpuNum) 0 hides every GPU from the trial: an empty CUDA_VISIBLE_DEVICES
    env = {
      CUDA_VISIBLE_DEVICES = ""
    }
  }
  # not converted: authorName: trialform does not record an author
}
