# Converted by `trialform convert nni` from config_hyperband.yml (NNI v2 schema).
# Fields trialform has no place for are listed as "not converted" comments.

search_space "config_hyperband" {
  nni_file = "search_space.json"
}

experiment "config_hyperband" {
  search_space = search_space.config_hyperband
  max_trials   = 100
  # NNI's config set no trial limit; trialform needs one: adjust max_trials
  concurrency = 10
  objective {
    metric = "default"
    goal   = "maximize"
  }
  tuner "hyperband" {
    max_budget = 60
    eta        = 3
    # not converted: advisor.classArgs.exec_mode: the hyperband tuner has no such setting
  }
  trial {
    command = "python3 main.py"
  }
}
