# Converted by `trialform convert polyaxon` from polyaxonfile.yaml (Polyaxon v1.1+ polyaxonfile).
# Fields trialform has no place for are listed as "not converted" comments.
# Polyaxon's tracking client (log_metrics) is not read: trials report results as NNI does,
# print `trialform: {"loss": 0.3}` lines, or lines that metric_regex matches.

platform "kubeflow" "default" {
  operator = "tfjob"
  image    = "tensorflow/tensorflow:1.10.0-gpu"
  worker {
    replicas = 2
    gpu      = 1
    # not converted: run.worker.container.workingDir: trialform runs the trial in a copy of code_dir (this directory by default); put the code there
    # not converted: run.worker.container.imagePullPolicy: the cluster's default pull policy applies
    # not converted: run.worker.init: trialform ships code_dir to the trial; put the code there
  }
}

search_space "polyaxonfile" {
  # a single run: trialform needs one param, this one only numbers the run
  param "run" {
    choice = [1]
  }
}

experiment "polyaxonfile" {
  platform     = platform.kubeflow.default
  search_space = search_space.polyaxonfile
  max_trials   = 1
  objective {
    # the polyaxonfile names no metric or goal to optimize: metric "default" (NNI's final result) and goal "maximize" assumed; set what the trials report
    metric = "default"
    goal   = "maximize"
  }
  trial {
    args = ["python", "-u", "run.py"]
  }
  # not converted: tags: trialform has no tags
}
