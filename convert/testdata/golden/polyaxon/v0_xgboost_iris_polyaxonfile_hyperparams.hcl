# Converted by `trialform convert polyaxon` from v0_xgboost_iris_polyaxonfile_hyperparams.yml (Polyaxon v0/v1 polyaxonfile).
# Fields trialform has no place for are listed as "not converted" comments.
# Polyaxon's tracking client (log_metrics) is not read: trials report results as NNI does,
# print `trialform: {"loss": 0.3}` lines, or lines that metric_regex matches.

platform "kubernetes" "default" {
  image = "python:3.6"
  # not converted: build.build_steps: trialform does not build images; build an image from python:3.6 with:
  # RUN pip install --no-cache-dir -r requirements.txt
}

search_space "v0_xgboost_iris_polyaxonfile_hyperparams" {
  param "log_learning_rate" {
    choice = [-5, -4, -3, -2, -1]
  }
  param "max_depth" {
    choice = [2, 4, 6]
  }
  param "num_rounds" {
    choice = [10, 20]
  }
  param "min_child_weight" {
    choice = [5, 6, 7]
  }
}

experiment "v0_xgboost_iris_polyaxonfile_hyperparams" {
  platform     = platform.kubernetes.default
  search_space = search_space.v0_xgboost_iris_polyaxonfile_hyperparams
  concurrency  = 5
  max_trials   = 50
  objective {
    # the polyaxonfile names no metric or goal to optimize: metric "default" (NNI's final result) and goal "maximize" assumed; set what the trials report
    metric = "default"
    goal   = "maximize"
  }
  tuner "random" {}
  trial {
    command = "python -u model.py --log_learning_rate=${param.log_learning_rate} --max_depth=${param.max_depth} --num_rounds=${param.num_rounds} --min_child_weight=${param.min_child_weight}"
  }
  # not converted: framework: trialform runs any command; the framework is not needed
  # not converted: tags: trialform has no tags
}
