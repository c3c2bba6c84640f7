# Converted by `trialform convert nni` from config.yml (NNI v2 schema).
# Fields trialform has no place for are listed as "not converted" comments.

search_space "config" {
  param "learning_rate" {
    choice = [0.00001, 0.0001, 0.001, 0.01, 0.005, 0.0002]
  }
  param "optimizer" {
    choice = ["Adam", "SGD"]
  }
}

experiment "config" {
  search_space    = search_space.config
  max_trials      = 6
  concurrency     = 1
  max_duration    = "1h"
  on_max_duration = "finish"
  objective {
    metric = "default"
    goal   = "maximize"
  }
  tuner "batch" {
    params = [{
      learning_rate = 0.00001
      optimizer     = "Adam"
      }, {
      learning_rate = 0.0001
      optimizer     = "Adam"
      }, {
      learning_rate = 0.001
      optimizer     = "Adam"
      }, {
      learning_rate = 0.01
      optimizer     = "SGD"
      }, {
      learning_rate = 0.005
      optimizer     = "SGD"
      }, {
      learning_rate = 0.0002
      optimizer     = "SGD"
    }]
    # the batch tuner's search space is one choice per parameter, holding every value the sets use
  }
  trial {
    command = "python3 mnist-keras.py"
    # NNI's trialGpuNumber (v1 gpuNum) 0 hides every GPU from the trial: an empty CUDA_VISIBLE_DEVICES
    env = {
      CUDA_VISIBLE_DEVICES = ""
    }
  }
}
