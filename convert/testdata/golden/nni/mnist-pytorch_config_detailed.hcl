# Converted by `trialform convert nni` from config_detailed.yml (NNI v2 schema).
# Fields trialform has no place for are listed as "not converted" comments.

search_space "MNIST" {
  param "batch_size" {
    choice = [16, 32, 64, 128]
  }
  param "hidden_size" {
    choice = [128, 256, 512, 1024]
  }
  param "lr" {
    choice = [0.0001, 0.001, 0.01, 0.1]
  }
  param "momentum" {
    uniform = [0, 1]
  }
}

experiment "MNIST" {
  search_space    = search_space.MNIST
  max_trials      = 10
  concurrency     = 4
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
    command  = "python3 mnist.py"
    code_dir = "."
    gpus     = 1
  }
  # not converted: trainingService.useActiveGpu: trialform schedules on the listed GPUs whether or not a display uses them
}
