# Converted by `trialform convert nni` from config_hybrid_v2.yml (NNI v2 schema).
# Fields trialform has no place for are listed as "not converted" comments.

variable "remote_password_1" {
  type        = string
  description = "trainingService[1].machineList[0].password from config_hybrid_v2.yml (a secret: give it with -var or TRIALFORM_VAR_remote_password_1)"
}

platform "local" "default" {}

platform "remote" "default" {
  machine {
    host     = "10.1.1.1"
    port     = 22
    user     = "xxx"
    password = var.remote_password_1
  }
  # not converted: trainingService[1].reuseMode: trialform starts one process, Job or object per trial
}

search_space "example_mnist" {
  nni_file = "search_space.json"
}

experiment "example_mnist" {
  platform = platform.local.default
  # NNI ran this experiment on several training services; trialform runs an experiment on one platform: the other platform blocks above are declared but unused
  search_space    = search_space.example_mnist
  max_trials      = 10
  concurrency     = 3
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
    # NNI's trialGpuNumber (v1 gpuNum) 0 hides every GPU from the trial: an empty CUDA_VISIBLE_DEVICES
    env = {
      CUDA_VISIBLE_DEVICES = ""
    }
  }
}
