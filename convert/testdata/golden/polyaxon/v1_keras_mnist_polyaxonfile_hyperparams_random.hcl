# Converted by `trialform convert polyaxon` from polyaxonfile_hyperparams_random.yml (Polyaxon v1.1+ polyaxonfile).
# Fields trialform has no place for are listed as "not converted" comments.
# Polyaxon's tracking client (log_metrics) is not read: trials report results as NNI does,
# print `trialform: {"loss": 0.3}` lines, or lines that metric_regex matches.

platform "kubernetes" "default" {
  image = "polyaxon/polyaxon-examples:tf"
  # not converted: run.container.workingDir: trialform runs the trial in a copy of code_dir (this directory by default); put the code there
  # not converted: run.init: trialform ships code_dir to the trial; put the code there (git and artifacts init containers are not run)
}

search_space "polyaxonfile_hyperparams_random" {
  param "conv1_size" {
    choice = [32, 64, 128]
  }
  param "conv2_size" {
    choice = [32, 64, 128]
  }
  param "dropout" {
    uniform = [0, 1]
  }
  param "hidden1_size" {
    choice = [10, 60, 110, 160, 210, 260, 310, 360, 410, 460, 510, 560]
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
}

experiment "polyaxonfile_hyperparams_random" {
  platform     = platform.kubernetes.default
  search_space = search_space.polyaxonfile_hyperparams_random
  concurrency  = 10
  max_trials   = 20
  objective {
    # the polyaxonfile names no metric or goal to optimize: metric "default" (NNI's final result) and goal "maximize" assumed; set what the trials report
    metric = "default"
    goal   = "maximize"
  }
  tuner "random" {}
  trial {
    args = ["python", "-u", "model.py", "--conv1_size=${param.conv1_size}", "--conv2_size=${param.conv2_size}", "--dropout=${param.dropout}", "--hidden1_size=${param.hidden1_size}", "--optimizer=${param.optimizer}", "--log_learning_rate=${param.log_learning_rate}", "--epochs=${param.epochs}"]
  }
  # not converted: tags: trialform has no tags
}
