# Converted by `trialform convert polyaxon` from polyaxonfile.yml (Polyaxon v1.1+ polyaxonfile).
# Fields trialform has no place for are listed as "not converted" comments.
# Polyaxon's tracking client (log_metrics) is not read: trials report results as NNI does,
# print `trialform: {"loss": 0.3}` lines, or lines that metric_regex matches.

variable "n_neighbors" {
  type    = number
  default = 3
}

variable "leaf_size" {
  type    = number
  default = 30
}

variable "metric" {
  type    = string
  default = "minkowski"
}

variable "p" {
  type    = number
  default = 2
}

variable "weights" {
  type    = string
  default = "uniform"
}

variable "test_size" {
  type    = number
  default = 0.3
}

variable "random_state" {
  type    = number
  default = 33
}

platform "kubernetes" "default" {
  image = "polyaxon/polyaxon-examples"
  # not converted: run.container.workingDir: trialform runs the trial in a copy of code_dir (this directory by default); put the code there
  # not converted: run.init: trialform ships code_dir to the trial; put the code there (git and artifacts init containers are not run)
}

search_space "polyaxonfile" {
  # a single run: each param is its variable's one value
  param "n_neighbors" {
    choice = [var.n_neighbors]
  }
  param "leaf_size" {
    choice = [var.leaf_size]
  }
  param "metric" {
    choice = [var.metric]
  }
  param "p" {
    choice = [var.p]
  }
  param "weights" {
    choice = [var.weights]
  }
  param "test_size" {
    choice = [var.test_size]
  }
  param "random_state" {
    choice = [var.random_state]
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
    args = ["python", "-u", "run.py", "--n_neighbors=${param.n_neighbors}", "--leaf_size=${param.leaf_size}", "--metric=${param.metric}", "--p=${param.p}", "--weights=${param.weights}", "--test_size=${param.test_size}", "--random_state=${param.random_state}"]
  }
  # not converted: tags: trialform has no tags
}
