# Converted by `trialform convert katib` from hp-tuning_simple-pbt.yaml (Katib v1beta1 Experiment).
# Fields trialform has no place for are listed as "not converted" comments.

platform "kubernetes" "default" {
  namespace = "kubeflow"
  image     = "ghcr.io/kubeflow/katib/simple-pbt:latest"
  # not converted: spec.trialTemplate.trialSpec.spec.template.spec.restartPolicy: trialform runs trials with restartPolicy Never and decides about resumes itself
}

search_space "simple-pbt" {
  param "lr" {
    quniform = [0.0001, 0.02, 0.0001]
  }
}

experiment "simple-pbt" {
  platform          = platform.kubernetes.default
  search_space      = search_space.simple-pbt
  max_trials        = 2
  concurrency       = 2
  max_failed_trials = 3
  objective {
    metric = "Validation-accuracy"
    goal   = "maximize"
    # Katib's default without metricStrategies: the greatest value the trial reported
    strategy = "max"
    # not converted: spec.objective.goal: trialform has no target value that ends the experiment; it runs max_trials
  }
  tuner "pbt" {
    # Katib algorithm "pbt": the same algorithm
    # trials get the params load_checkpoint_dir and save_checkpoint_dir: use them in the trial command
    checkpoint_dir  = "/var/log/katib/checkpoints/"
    population_size = 40
    factor          = 0.2
  }
  trial {
    args         = ["python3", "/opt/pbt/pbt_test.py", "--epochs=20", "--lr=${param.lr}", "--checkpoint=/var/log/katib/checkpoints/"]
    metric_regex = "(?P<name>[\\w|-]+)\\s*=\\s*(?P<value>[-+]?[0-9]*\\.?[0-9]+(?:[eE][-+]?[0-9]+)?)"
  }
  # not converted: spec.resumePolicy: trialform always resumes: state and platform are re-read on every plan
}
