# Converted by `trialform convert polyaxon` from v0_mxnet_mnist_polyaxonfile_hyperparams.yml (Polyaxon v0/v1 polyaxonfile).
# Fields trialform has no place for are listed as "not converted" comments.
# Polyaxon's tracking client (log_metrics) is not read: trials report results as NNI does,
# print `trialform: {"loss": 0.3}` lines, or lines that metric_regex matches.

variable "conv1_kernel" {
  default     = 5
  description = "from declarations.conv1_kernel"
}

variable "conv1_filters" {
  default     = 10
  description = "from declarations.conv1_filters"
}

variable "conv2_kernel" {
  default     = 5
  description = "from declarations.conv2_kernel"
}

variable "conv2_filters" {
  default     = 10
  description = "from declarations.conv2_filters"
}

variable "fc1_hidden" {
  default     = 10
  description = "from declarations.fc1_hidden"
}

variable "epochs" {
  default     = 1
  description = "from declarations.epochs"
}

platform "kubernetes" "default" {
  image = "python:3.6"
  # not converted: build.build_steps: trialform does not build images; build an image from python:3.6 with:
  # RUN pip install --no-cache-dir -r requirements.txt
}

search_space "v0_mxnet_mnist_polyaxonfile_hyperparams" {
  param "conv1_activation" {
    choice = ["relu", "sigmoid", "tanh", "softrelu"]
  }
  param "conv2_activation" {
    choice = ["relu", "sigmoid", "tanh", "softrelu"]
  }
  param "fc1_activation" {
    choice = ["relu", "sigmoid", "tanh", "softrelu"]
  }
  param "optimizer" {
    choice = ["adam", "rmsprop", "sgd"]
  }
  param "log_learning_rate" {
    choice = [-5, -4, -3, -2, -1]
  }
  param "epochs" {
    choice = [1, 3, 7]
  }
  param "batch_size" {
    choice = [32, 64]
  }
}

experiment "v0_mxnet_mnist_polyaxonfile_hyperparams" {
  platform     = platform.kubernetes.default
  search_space = search_space.v0_mxnet_mnist_polyaxonfile_hyperparams
  concurrency  = 5
  max_trials   = 50
  objective {
    # the polyaxonfile names no metric or goal to optimize: metric "default" (NNI's final result) and goal "maximize" assumed; set what the trials report
    metric = "default"
    goal   = "maximize"
  }
  tuner "random" {}
  trial {
    command = "python -u model.py --conv1_kernel=${var.conv1_kernel} --conv1_filters=${var.conv1_filters} --conv1_activation=${param.conv1_activation} --conv2_kernel=${var.conv2_kernel} --conv2_filters=${var.conv2_filters} --conv2_activation=${param.conv2_activation} --fc1_hidden=${var.fc1_hidden} --fc1_activation=${param.fc1_activation} --optimizer=${param.optimizer} --log_learning_rate=${param.log_learning_rate} --batch_size=${param.batch_size} --epochs=${param.epochs}"
  }
  # not converted: framework: trialform runs any command; the framework is not needed
  # not converted: tags: trialform has no tags
}
