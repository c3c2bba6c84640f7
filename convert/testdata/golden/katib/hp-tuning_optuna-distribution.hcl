# Converted by `trialform convert katib` from hp-tuning_optuna-distribution.yaml (Katib v1beta1 Experiment).
# Fields trialform has no place for are listed as "not converted" comments.

platform "kubernetes" "default" {
  namespace = "kubeflow"
  image     = "ghcr.io/kubeflow/katib/pytorch-mnist-cpu:latest"
  # not converted: spec.trialTemplate.trialSpec.spec.template.spec.restartPolicy: trialform runs trials with restartPolicy Never and decides about resumes itself
}

search_space "optuna-distribution" {
  param "lr" {
    choice = [1, 1.1, 1.2, 1.3, 1.4, 1.5, 1.6, 1.7, 1.8, 1.9, 2, 2.1, 2.2, 2.3, 2.4, 2.5, 2.6, 2.7, 2.8, 2.9, 3, 3.1, 3.2, 3.3, 3.4, 3.5, 3.6, 3.7, 3.8, 3.9, 4, 4.1, 4.2, 4.3, 4.4, 4.5, 4.6, 4.7, 4.8, 4.9, 5]
  }
  param "momentum" {
    loguniform = [0.001, 3]
  }
  param "epochs" {
    randint = [1, 4]
  }
  param "batch_size" {
    qloguniform = [32, 64, 1]
  }
}

experiment "optuna-distribution" {
  platform          = platform.kubernetes.default
  search_space      = search_space.optuna-distribution
  max_trials        = 12
  concurrency       = 3
  max_failed_trials = 3
  objective {
    metric = "loss"
    goal   = "minimize"
    # not converted: spec.objective.goal: trialform has no target value that ends the experiment; it runs max_trials
  }
  tuner "tpe" {
    # Katib algorithm "tpe": the same algorithm
  }
  trial {
    args         = ["python3", "/opt/pytorch-mnist/mnist.py", "--epochs=${param.epochs}", "--batch-size=${param.batch_size}", "--lr=${param.lr}", "--momentum=${param.momentum}"]
    metric_regex = "(?P<name>[\\w|-]+)\\s*=\\s*(?P<value>[-+]?[0-9]*\\.?[0-9]+(?:[eE][-+]?[0-9]+)?)"
  }
}
