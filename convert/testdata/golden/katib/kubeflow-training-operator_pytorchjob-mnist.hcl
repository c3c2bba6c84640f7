# Converted by `trialform convert katib` from kubeflow-training-operator_pytorchjob-mnist.yaml (Katib v1beta1 Experiment).
# Fields trialform has no place for are listed as "not converted" comments.

platform "kubeflow" "default" {
  namespace = "kubeflow"
  operator  = "pytorchjob"
  image     = "ghcr.io/kubeflow/katib/pytorch-mnist-cpu:latest"
  master {
    replicas = 1
    # not converted: spec.trialTemplate.trialSpec.spec.pytorchReplicaSpecs.Master.restartPolicy: replicas run with restartPolicy Never; trialform decides about resumes
  }
  worker {
    replicas = 1
    # not converted: spec.trialTemplate.trialSpec.spec.pytorchReplicaSpecs.Worker.restartPolicy: replicas run with restartPolicy Never; trialform decides about resumes
  }
}

search_space "pytorchjob-mnist" {
  param "lr" {
    uniform = [0.01, 0.05]
  }
  param "momentum" {
    uniform = [0.5, 0.9]
  }
}

experiment "pytorchjob-mnist" {
  platform          = platform.kubeflow.default
  search_space      = search_space.pytorchjob-mnist
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
    args         = ["python3", "/opt/pytorch-mnist/mnist.py", "--epochs=1", "--batch-size=16", "--lr=${param.lr}", "--momentum=${param.momentum}"]
    metric_regex = "(?P<name>[\\w|-]+)\\s*=\\s*(?P<value>[-+]?[0-9]*\\.?[0-9]+(?:[eE][-+]?[0-9]+)?)"
  }
}
