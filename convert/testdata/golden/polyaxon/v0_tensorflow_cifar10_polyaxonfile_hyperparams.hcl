# Converted by `trialform convert polyaxon` from v0_tensorflow_cifar10_polyaxonfile_hyperparams.yml (Polyaxon v0/v1 polyaxonfile).
# Fields trialform has no place for are listed as "not converted" comments.
# Polyaxon's tracking client (log_metrics) is not read: trials report results as NNI does,
# print `trialform: {"loss": 0.3}` lines, or lines that metric_regex matches.

variable "batch_size" {
  default     = 128
  description = "from declarations.batch_size"
}

variable "num_steps" {
  default     = 5000
  description = "from declarations.num_steps"
}

platform "kubernetes" "default" {
  image = "tensorflow/tensorflow:1.4.1"
  # not converted: build.build_steps: trialform does not build images; build an image from tensorflow/tensorflow:1.4.1 with:
  # RUN pip install --no-cache-dir -U polyaxon-client==0.5.5
}

search_space "v0_tensorflow_cifar10_polyaxonfile_hyperparams" {
  param "learning_rate" {
    choice = [0.001, 0.02575, 0.0505, 0.07525, 0.1]
  }
  param "num_layers" {
    choice = [44, 45, 46]
  }
  param "momentum" {
    choice = [0.85, 0.9, 0.93]
  }
}

experiment "v0_tensorflow_cifar10_polyaxonfile_hyperparams" {
  platform     = platform.kubernetes.default
  search_space = search_space.v0_tensorflow_cifar10_polyaxonfile_hyperparams
  concurrency  = 5
  max_trials   = 10
  objective {
    # the polyaxonfile names no metric or goal to optimize: metric "default" (NNI's final result) and goal "maximize" assumed; set what the trials report
    metric = "default"
    goal   = "maximize"
  }
  tuner "random" {}
  trial {
    command = "python run.py    --train-batch-size=${var.batch_size} --train-steps=${var.num_steps} --learning-rate=${param.learning_rate} --momentum=${param.momentum} \\"
  }
  # not converted: framework: trialform runs any command; the framework is not needed
  # not converted: tags: trialform has no tags
}
