# Converted by `trialform convert polyaxon` from v0_pytorch_mnist_polyaxonfile_hyperparams.yml (Polyaxon v0/v1 polyaxonfile).
# Fields trialform has no place for are listed as "not converted" comments.
# Polyaxon's tracking client (log_metrics) is not read: trials report results as NNI does,
# print `trialform: {"loss": 0.3}` lines, or lines that metric_regex matches.

variable "batch_size_train" {
  default     = 128
  description = "from declarations.batch_size_train"
}

variable "batch_size_test" {
  default     = 1000
  description = "from declarations.batch_size_test"
}

variable "epochs" {
  default     = 5
  description = "from declarations.epochs"
}

variable "train_steps" {
  default     = 400
  description = "from declarations.train_steps"
}

platform "kubernetes" "default" {
  image = "python:3"
  # not converted: build.build_steps: trialform does not build images; build an image from python:3 with:
  # RUN pip install -r requirements.txt
}

search_space "v0_pytorch_mnist_polyaxonfile_hyperparams" {
  param "lr" {
    choice = [0.001, 0.02575, 0.0505, 0.07525, 0.1]
  }
  param "momentum" {
    uniform = [0.5, 0.6]
  }
}

experiment "v0_pytorch_mnist_polyaxonfile_hyperparams" {
  platform     = platform.kubernetes.default
  search_space = search_space.v0_pytorch_mnist_polyaxonfile_hyperparams
  concurrency  = 5
  max_trials   = 10
  objective {
    # the polyaxonfile names no metric or goal to optimize: metric "default" (NNI's final result) and goal "maximize" assumed; set what the trials report
    metric = "default"
    goal   = "maximize"
  }
  tuner "random" {}
  trial {
    command = "python -u run.py  --batch-size=${var.batch_size_train} --test-batch-size=${var.batch_size_test} --epochs=${var.epochs} --lr=${param.lr} --momentum=${param.momentum} --epochs=${var.epochs}"
  }
  # not converted: framework: trialform runs any command; the framework is not needed
  # not converted: tags: trialform has no tags
}
