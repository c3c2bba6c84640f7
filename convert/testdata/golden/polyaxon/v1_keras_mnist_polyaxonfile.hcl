# Converted by `trialform convert polyaxon` from polyaxonfile.yml (Polyaxon v1.1+ polyaxonfile).
# Fields trialform has no place for are listed as "not converted" comments.
# Polyaxon's tracking client (log_metrics) is not read: trials report results as NNI does,
# print `trialform: {"loss": 0.3}` lines, or lines that metric_regex matches.

variable "conv1_size" {
  type    = number
  default = 32
}

variable "conv2_size" {
  type    = number
  default = 64
}

variable "dropout" {
  type    = number
  default = 0.8
}

variable "hidden1_size" {
  type    = number
  default = 500
}

variable "optimizer" {
  type    = string
  default = "adam"
}

variable "log_learning_rate" {
  type    = number
  default = -3
}

variable "epochs" {
  type    = number
  default = 1
}

platform "kubernetes" "default" {
  image = "polyaxon/polyaxon-examples:tf"
  # not converted: run.container.workingDir: trialform runs the trial in a copy of code_dir (this directory by default); put the code there
  # not converted: run.init: trialform ships code_dir to the trial; put the code there (git and artifacts init containers are not run)
}

search_space "polyaxonfile" {
  # a single run: each param is its variable's one value
  param "conv1_size" {
    choice = [var.conv1_size]
  }
  param "conv2_size" {
    choice = [var.conv2_size]
  }
  param "dropout" {
    choice = [var.dropout]
  }
  param "hidden1_size" {
    choice = [var.hidden1_size]
  }
  param "optimizer" {
    choice = [var.optimizer]
  }
  param "log_learning_rate" {
    choice = [var.log_learning_rate]
  }
  param "epochs" {
    choice = [var.epochs]
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
    args = ["python", "-u", "model.py", "--conv1_size=${param.conv1_size}", "--conv2_size=${param.conv2_size}", "--dropout=${param.dropout}", "--hidden1_size=${param.hidden1_size}", "--optimizer=${param.optimizer}", "--log_learning_rate=${param.log_learning_rate}", "--epochs=${param.epochs}"]
  }
  # not converted: tags: trialform has no tags
}
