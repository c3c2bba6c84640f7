# Converted by `trialform convert katib` from hp-tuning_hyperopt-distribution.yaml (Katib v1beta1 Experiment).
# Fields trialform has no place for are listed as "not converted" comments.

platform "kubernetes" "default" {
  namespace = "kubeflow"
  image     = "ghcr.io/kubeflow/katib/pytorch-mnist-cpu:latest"
  # not converted: spec.trialTemplate.trialSpec.spec.template.spec.restartPolicy: trialform runs trials with restartPolicy Never and decides about resumes itself
}

search_space "hyperopt-distribution" {
  param "lr" {
    qnormal = [0.03, 0.00666666666667, 0.01]
  }
  param "momentum" {
    uniform = [0.001, 1]
  }
  param "epochs" {
    qloguniform = [1, 3, 1]
  }
  param "batch_size" {
    qlognormal = [3.81230949308, 0.115524530093, 1]
  }
}

experiment "hyperopt-distribution" {
  platform          = platform.kubernetes.default
  search_space      = search_space.hyperopt-distribution
  max_trials        = 12
  concurrency       = 3
  max_failed_trials = 3
  objective {
    metric = "loss"
    goal   = "minimize"
    # Katib's default without metricStrategies: the least value the trial reported
    strategy = "min"
    # not converted: spec.objective.goal: trialform has no target value that ends the experiment; it runs max_trials
  }
  tuner "random" {
    # Katib algorithm "random": the same algorithm
  }
  trial {
    args         = ["python3", "/opt/pytorch-mnist/mnist.py", "--epochs=${param.epochs}", "--batch-size=${param.batch_size}", "--lr=${param.lr}", "--momentum=${param.momentum}"]
    metric_regex = "(?P<name>[\\w|-]+)\\s*=\\s*(?P<value>[-+]?[0-9]*\\.?[0-9]+(?:[eE][-+]?[0-9]+)?)"
  }
}
