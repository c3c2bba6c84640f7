# A second file: an experiment that copies settings from the first.
experiment "nni" {
  search_space = search_space.from_nni
  tuner "random" {
    seed = experiment.svm.tuner.seed + 1
  }
  max_trials   = experiment.svm.max_trials * 2
  max_duration = "1d"
  trial {
    args = [local.python, "train.py", "--lr=${param.lr}", "${param.layer}", upper("x")]
  }
}
