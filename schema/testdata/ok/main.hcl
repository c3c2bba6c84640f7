variable "max_trials" {
  default     = 20
  type        = number
  description = "How many trials in all."
}

variable "kernels" {
  type    = list(string)
  default = ["linear", "rbf", "poly", "sigmoid"]
}

locals {
  python = "python3"
}

locals {
  script = "${local.python} main.py"
}

platform "local" "default" {
  gpu_indices        = [0, 1]
  max_trials_per_gpu = 1
}

search_space "svm" {
  param "C" { uniform = [0.1, 1] }
  param "kernel" { choice = var.kernels }
  param "lr" { loguniform = [1e-4, 1e-1] }
  param "units" { quniform = [32, 256, 32] }
  param "layers" { randint = [1, 5] }
  param "layer" {
    option "conv" {
      param "kernel" { choice = [3, 5] }
    }
    option "pool" {}
  }
}

search_space "from_nni" {
  nni_file = "search_space.json"
}

experiment "svm" {
  platform     = platform.local.default
  search_space = search_space.svm
  objective {
    metric = "default"
    goal   = "maximize"
  }
  tuner "tpe" {
    seed = 1
  }
  assessor "medianstop" {
    start_step = 5
  }
  max_trials        = var.max_trials
  concurrency       = 2
  max_failed_trials = 5
  max_duration      = "2h"
  trial {
    code_dir     = "src"
    command      = "${local.script} --C ${param.C} --kernel ${param.kernel}"
    env          = { PYTHONHASHSEED = "0" }
    max_duration = "10m"
    gpus         = 0
    metric_regex = "(?P<name>\\w+)=(?P<value>[-+]?[0-9.]+(?:[eE][-+]?\\d+)?)"
  }
}
