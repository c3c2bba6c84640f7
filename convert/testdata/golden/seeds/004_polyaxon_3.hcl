# Converted by `trialform convert polyaxon` from polyaxonfile.yml (Polyaxon v0/v1 polyaxonfile).
# Fields trialform has no place for are listed as "not converted" comments.
# Polyaxon's tracking client (log_metrics) is not read: trials report results as NNI does,
# print `trialform: {"loss": 0.3}` lines, or lines that metric_regex matches.

variable "batch_size" {
  type        = number
  default     = 128
  description = "batch size"
}

variable "num_steps" {
  type    = number
  default = 500
}

variable "learning_rate" {
  type    = number
  default = 0.001
}

variable "dropout" {
  type    = number
  default = 0.25
}

variable "num_epochs" {
  type    = number
  default = 1
}

variable "activation" {
  type    = string
  default = "relu"
}

platform "kubernetes" "default" {
  image = "tensorflow/tensorflow:1.4.1-py3"
  # not converted: build.build_steps: trialform does not build images; build an image from tensorflow/tensorflow:1.4.1-py3 with:
  # RUN pip3 install --no-cache-dir -U polyaxon-client==0.5.0
}

search_space "polyaxonfile" {
  # a single run: each param is its variable's one value
  param "batch_size" {
    choice = [var.batch_size]
  }
  param "num_steps" {
    choice = [var.num_steps]
  }
  param "learning_rate" {
    choice = [var.learning_rate]
  }
  param "dropout" {
    choice = [var.dropout]
  }
  param "num_epochs" {
    choice = [var.num_epochs]
  }
  param "activation" {
    choice = [var.activation]
  }
}

experiment "polyaxonfile" {
  platform     = platform.kubernetes.default
  search_space = search_space.polyaxonfile
  max_trials   = 1
  objective {
    # the polyaxonfile names no metric or goal to optimize: metric "default" (NNI's final result) and goal "maximize" assumed; set what the trials report
    metric = "default"
    goal   = "maximize"
  }
  trial {
    command = "python3 model.py --batch_size=${param.batch_size} --num_steps=${param.num_steps} --learning_rate=${param.learning_rate} --dropout=${param.dropout} --num_epochs=${param.num_epochs} --activation=${param.activation}"
  }
}
