# Converted by `trialform convert polyaxon` from polyaxonfile.yml (Polyaxon v0/v1 polyaxonfile).
# Fields trialform has no place for are listed as "not converted" comments.
# Polyaxon's tracking client (log_metrics) is not read: trials report results as NNI does,
# print `trialform: {"loss": 0.3}` lines, or lines that metric_regex matches.

platform "kubernetes" "default" {
  image = "tensorflow/tensorflow:1.4.1-py3"
  node_selector = {
    "kubernetes.io/hostname" = "gpu-a"
  }
  resources {
    gpu = 1
  }
  # not converted: build.build_steps: trialform does not build images; build an image from tensorflow/tensorflow:1.4.1-py3 with:
  # RUN pip3 install polyaxon-client
}

search_space "polyaxonfile" {
  # a single run: trialform needs one param, this one only numbers the run
  param "run" {
    choice = [1]
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
    command = "python model.py"
  }
}
