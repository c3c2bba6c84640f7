# Converted by `trialform convert polyaxon` from v0_tensorflow_cifar10_polyaxonfile_gpu.yml (Polyaxon v0/v1 polyaxonfile).
# Fields trialform has no place for are listed as "not converted" comments.
# Polyaxon's tracking client (log_metrics) is not read: trials report results as NNI does,
# print `trialform: {"loss": 0.3}` lines, or lines that metric_regex matches.

platform "kubernetes" "default" {
  image = "tensorflow/tensorflow:1.4.1-gpu"
  resources {
    gpu = 1
  }
  # not converted: build.build_steps: trialform does not build images; build an image from tensorflow/tensorflow:1.4.1-gpu with:
  # RUN pip install --no-cache-dir -U polyaxon-client==0.5.5
}

search_space "v0_tensorflow_cifar10_polyaxonfile_gpu" {
  # a single run: trialform needs one param, this one only numbers the run
  param "run" {
    choice = [1]
  }
}

experiment "v0_tensorflow_cifar10_polyaxonfile_gpu" {
  platform     = platform.kubernetes.default
  search_space = search_space.v0_tensorflow_cifar10_polyaxonfile_gpu
  max_trials   = 1
  objective {
    # the polyaxonfile names no metric or goal to optimize: metric "default" (NNI's final result) and goal "maximize" assumed; set what the trials report
    metric = "default"
    goal   = "maximize"
  }
  trial {
    command = "python -u run.py --num-gpus=1 --train-steps=400"
  }
  # not converted: framework: trialform runs any command; the framework is not needed
  # not converted: tags: trialform has no tags
}
