# Converted by `trialform convert katib` from trial-template_trial-metadata-substitution.yaml (Katib v1beta1 Experiment).
# Fields trialform has no place for are listed as "not converted" comments.

platform "kubernetes" "default" {
  namespace = "kubeflow"
  image     = "ghcr.io/kubeflow/katib/pytorch-mnist-cpu:latest"
  # not converted: spec.trialTemplate.trialSpec.spec.template.spec.restartPolicy: trialform runs trials with restartPolicy Never and decides about resumes itself
}

search_space "trial-metadata-substitution" {
  param "lr" {
    uniform = [0.01, 0.05]
  }
  param "momentum" {
    uniform = [0.5, 0.9]
  }
}

experiment "trial-metadata-substitution" {
  platform          = platform.kubernetes.default
  search_space      = search_space.trial-metadata-substitution
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
    args = ["python3", "/opt/pytorch-mnist/mnist.py", "--epochs=1", "--batch-size=16", "--lr=${param.lr}", "--momentum=${param.momentum}"]
    env = {
      TRIAL_ANNOTATION_CUSTOM = "$${trialParameters.trialAnnotationCustom}"
      TRIAL_API_VERSION       = "$${trialParameters.trialAPIVersion}"
      TRIAL_KIND              = "$${trialParameters.trialKind}"
      TRIAL_LABEL_CUSTOM      = "$${trialParameters.trialLabelCustom}"
      TRIAL_NAME              = "$${trialParameters.trialName}"
      TRIAL_NAMESPACE         = "$${trialParameters.trialNamespace}"
    }
    metric_regex = "(?P<name>[\\w|-]+)\\s*=\\s*(?P<value>[-+]?[0-9]*\\.?[0-9]+(?:[eE][-+]?[0-9]+)?)"
    # not converted: spec.trialTemplate.trialParameters[2]: reference "${trialSpec.Name}" is not a parameter (Katib's metadata references have no trialform equivalent); ${trialParameters.trialName} stays as text
    # not converted: spec.trialTemplate.trialParameters[3]: reference "${trialSpec.Namespace}" is not a parameter (Katib's metadata references have no trialform equivalent); ${trialParameters.trialNamespace} stays as text
    # not converted: spec.trialTemplate.trialParameters[4]: reference "${trialSpec.Kind}" is not a parameter (Katib's metadata references have no trialform equivalent); ${trialParameters.trialKind} stays as text
    # not converted: spec.trialTemplate.trialParameters[5]: reference "${trialSpec.APIVersion}" is not a parameter (Katib's metadata references have no trialform equivalent); ${trialParameters.trialAPIVersion} stays as text
    # not converted: spec.trialTemplate.trialParameters[6]: reference "${trialSpec.Labels[custom-key]}" is not a parameter (Katib's metadata references have no trialform equivalent); ${trialParameters.trialLabelCustom} stays as text
    # not converted: spec.trialTemplate.trialParameters[7]: reference "${trialSpec.Annotations[custom-key]}" is not a parameter (Katib's metadata references have no trialform equivalent); ${trialParameters.trialAnnotationCustom} stays as text
  }
}
