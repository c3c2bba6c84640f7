# Converted by `trialform convert katib` from metrics-collector_file-metrics-collector.yaml (Katib v1beta1 Experiment).
# Fields trialform has no place for are listed as "not converted" comments.

platform "kubernetes" "default" {
  namespace = "kubeflow"
  image     = "ghcr.io/kubeflow/katib/pytorch-mnist-cpu:latest"
  # not converted: spec.trialTemplate.trialSpec.spec.template.spec.restartPolicy: trialform runs trials with restartPolicy Never and decides about resumes itself
}

search_space "file-metrics-collector" {
  param "lr" {
    uniform = [0.01, 0.03]
  }
  param "momentum" {
    uniform = [0.3, 0.7]
  }
}

experiment "file-metrics-collector" {
  platform          = platform.kubernetes.default
  search_space      = search_space.file-metrics-collector
  max_trials        = 12
  concurrency       = 3
  max_failed_trials = 3
  objective {
    metric = "accuracy"
    goal   = "maximize"
    # Katib's default without metricStrategies: the greatest value the trial reported
    strategy = "max"
    # not converted: spec.objective.goal: trialform has no target value that ends the experiment; it runs max_trials
    # not converted: spec.objective.additionalMetricNames: trialform records every metric a trial reports; only the objective is tuned, these stay extra metrics (an objective block for one would make it a second objective)
  }
  tuner "random" {
    # Katib algorithm "random": the same algorithm
  }
  trial {
    args         = ["python3", "/opt/pytorch-mnist/mnist.py", "--epochs=1", "--log-path=/katib/mnist.log", "--lr=${param.lr}", "--momentum=${param.momentum}"]
    metric_regex = "(?P<name>[\\w|-]+)\\s*=\\s*(?P<value>[-+]?[0-9]*\\.?[0-9]+(?:[eE][-+]?[0-9]+)?)"
    # not converted: spec.metricsCollectorSpec.collector.kind: File: trialform reads metrics from the trial's output; print lines like "accuracy=0.93" (metric_regex), or report them as NNI does
    # not converted: spec.metricsCollectorSpec.source: trialform's metric_regex reads name=value lines; adapt metric_regex to your format
  }
}
