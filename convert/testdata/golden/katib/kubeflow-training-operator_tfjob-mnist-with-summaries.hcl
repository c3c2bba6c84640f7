# Converted by `trialform convert katib` from kubeflow-training-operator_tfjob-mnist-with-summaries.yaml (Katib v1beta1 Experiment).
# Fields trialform has no place for are listed as "not converted" comments.

platform "kubeflow" "default" {
  namespace = "kubeflow"
  operator  = "tfjob"
  image     = "ghcr.io/kubeflow/katib/tf-mnist-with-summaries:latest"
  worker {
    replicas = 2
    # not converted: spec.trialTemplate.trialSpec.spec.tfReplicaSpecs.Worker.restartPolicy: replicas run with restartPolicy Never; trialform decides about resumes
  }
}

search_space "tfjob-mnist-with-summaries" {
  param "learning_rate" {
    uniform = [0.01, 0.05]
  }
  param "batch_size" {
    randint = [32, 65]
  }
}

experiment "tfjob-mnist-with-summaries" {
  platform          = platform.kubeflow.default
  search_space      = search_space.tfjob-mnist-with-summaries
  max_trials        = 12
  concurrency       = 3
  max_failed_trials = 3
  objective {
    metric = "accuracy"
    goal   = "maximize"
    # Katib's default without metricStrategies: the greatest value the trial reported
    strategy = "max"
    # not converted: spec.objective.goal: trialform has no target value that ends the experiment; it runs max_trials
  }
  tuner "random" {
    # Katib algorithm "random": the same algorithm
  }
  trial {
    args         = ["python", "/opt/tf-mnist-with-summaries/mnist.py", "--epochs=1", "--learning-rate=${param.learning_rate}", "--batch-size=${param.batch_size}", "--log-path=/mnist-with-summaries-logs"]
    metric_regex = "(?P<name>[\\w|-]+)\\s*=\\s*(?P<value>[-+]?[0-9]*\\.?[0-9]+(?:[eE][-+]?[0-9]+)?)"
    # not converted: spec.trialTemplate.primaryPodLabels: trialform has no equivalent setting
    # not converted: spec.metricsCollectorSpec.collector.kind: TensorFlowEvent: trialform reads metrics from the trial's output; print lines like "accuracy=0.93" (metric_regex), or report them as NNI does
    # not converted: spec.metricsCollectorSpec.source: trialform's metric_regex reads name=value lines; adapt metric_regex to your format
  }
}
