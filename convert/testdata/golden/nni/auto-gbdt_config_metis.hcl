# Converted by `trialform convert nni` from config_metis.yml (NNI v2 schema).
# Fields trialform has no place for are listed as "not converted" comments.

search_space "config_metis" {
  param "num_leaves" {
    choice = [31, 28, 24, 20]
  }
  param "learning_rate" {
    choice = [0.01, 0.05, 0.1, 0.2]
  }
  param "bagging_freq" {
    choice = [1, 2, 4, 8, 10]
  }
}

experiment "config_metis" {
  search_space = search_space.config_metis
  max_trials   = 10
  concurrency  = 1
  objective {
    metric = "default"
    goal   = "minimize"
  }
  tuner "metis" {}
  trial {
    command = "python3 main.py"
  }
}
