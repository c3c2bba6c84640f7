# Converted by `trialform convert polyaxon` from polyaxonfile_hyperparams_mapping.yml (Polyaxon v1.1+ polyaxonfile).
# Fields trialform has no place for are listed as "not converted" comments.
# Polyaxon's tracking client (log_metrics) is not read: trials report results as NNI does,
# print `trialform: {"loss": 0.3}` lines, or lines that metric_regex matches.

platform "kubernetes" "default" {
  image = "polyaxon/polyaxon-examples:tf"
  # not converted: run.container.workingDir: trialform runs the trial in a copy of code_dir (this directory by default); put the code there
  # not converted: run.init: trialform ships code_dir to the trial; put the code there (git and artifacts init containers are not run)
}

search_space "polyaxonfile_hyperparams_mapping" {
  param "conv1_size" {
    choice = [32, 64, 128]
  }
  param "conv2_size" {
    choice = [32, 64, 128]
  }
  param "dropout" {
    choice = [0.1, 0.2, 0.3]
  }
  param "epochs" {
    choice = [1, 2]
  }
  param "hidden1_size" {
    choice = [10, 100, 600]
  }
  param "log_learning_rate" {
    choice = [-5, -1, -2, -3]
  }
  param "optimizer" {
    choice = ["adam", "sgd", "rmsprop"]
  }
}

experiment "polyaxonfile_hyperparams_mapping" {
  platform     = platform.kubernetes.default
  search_space = search_space.polyaxonfile_hyperparams_mapping
  concurrency  = 2
  max_trials   = 4
  objective {
    # the polyaxonfile names no metric or goal to optimize: metric "default" (NNI's final result) and goal "maximize" assumed; set what the trials report
    metric = "default"
    goal   = "maximize"
  }
  tuner "batch" {
    # Polyaxon's mapping: the listed parameter sets, in order
    params = [{
      conv1_size        = 32
      conv2_size        = 32
      dropout           = 0.1
      epochs            = 1
      hidden1_size      = 10
      log_learning_rate = -5
      optimizer         = "adam"
      }, {
      conv1_size        = 64
      conv2_size        = 64
      dropout           = 0.2
      epochs            = 2
      hidden1_size      = 100
      log_learning_rate = -1
      optimizer         = "sgd"
      }, {
      conv1_size        = 64
      conv2_size        = 128
      dropout           = 0.2
      epochs            = 2
      hidden1_size      = 100
      log_learning_rate = -2
      optimizer         = "rmsprop"
      }, {
      conv1_size        = 128
      conv2_size        = 128
      dropout           = 0.3
      epochs            = 1
      hidden1_size      = 600
      log_learning_rate = -3
      optimizer         = "rmsprop"
    }]
  }
  trial {
    args = ["python", "-u", "model.py", "--conv1_size=${param.conv1_size}", "--conv2_size=${param.conv2_size}", "--dropout=${param.dropout}", "--hidden1_size=${param.hidden1_size}", "--optimizer=${param.optimizer}", "--log_learning_rate=${param.log_learning_rate}", "--epochs=${param.epochs}"]
  }
  # not converted: tags: trialform has no tags
}
