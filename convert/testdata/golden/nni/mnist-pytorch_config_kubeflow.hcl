# Converted by `trialform convert nni` from config_kubeflow.yml (NNI v1 schema).
# Fields trialform has no place for are listed as "not converted" comments.

platform "kubeflow" "default" {
  operator = "tfjob"
  image    = "msranni/nni:latest"
  nfs {
    server     = "10.10.10.10"
    path       = "/var/nfs/general"
    mount_path = "/nfs"
    # mount_path: where trials see the share (NNI chose it itself)
  }
  worker {
    replicas = 1
    cpu      = 1
    memory   = "8192Mi"
    gpu      = 0
  }
  # not converted: kubeflowConfig.apiVersion: trialform uses kubeflow.org/v1
}

search_space "example_dist_pytorch" {
  nni_file = "search_space.json"
}

experiment "example_dist_pytorch" {
  platform        = platform.kubeflow.default
  search_space    = search_space.example_dist_pytorch
  max_trials      = 1
  concurrency     = 1
  max_duration    = "1h"
  on_max_duration = "finish"
  objective {
    metric = "default"
    goal   = "maximize"
  }
  tuner "tpe" {
    multivariate = false
  }
  trial {
    code_dir = "."
    command  = "python3 mnist.py"
  }
  # not converted: authorName: trialform does not record an author
}
