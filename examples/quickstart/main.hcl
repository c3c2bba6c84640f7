# The quickstart: 20 trials of a stdlib-only Python objective on this machine.
#   trialform plan
#   trialform apply -auto-approve -wait
#   trialform trials quickstart

variable "max_trials" {
  default     = 20
  description = "How many trials the experiment runs in all."
}

variable "python" {
  default     = "python3"
  description = "The Python interpreter that runs train.py."
}

search_space "quickstart" {
  param "x" { uniform = [-5, 5] }
  param "lr" { loguniform = [0.0001, 1] }
  param "optimizer" { choice = ["sgd", "adam", "rmsprop"] }
  param "layers" { randint = [1, 6] }
  param "units" { quniform = [16, 256, 16] }
}

experiment "quickstart" {
  search_space = search_space.quickstart

  objective {
    metric = "default"
    goal   = "minimize"
  }

  tuner "tpe" {
    seed = 42
  }

  max_trials        = var.max_trials
  concurrency       = 4
  max_failed_trials = 3
  max_duration      = "10m"

  trial {
    command      = "${var.python} train.py --optimizer ${param.optimizer}"
    env          = { PYTHONHASHSEED = "0" }
    max_duration = "1m"
  }
}
