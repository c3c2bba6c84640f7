# Converted by `trialform convert nni` from config_kubeflow.yml (NNI v1 schema).
# Fields trialform has no place for are listed as "not converted" comments.

variable "nfs_server" {
  type        = string
  description = "kubeflowConfig.nfs.server from config_kubeflow.yml, a placeholder there ({your_nfs_server_ip}): give its value with -var or TRIALFORM_VAR_nfs_server"
}

variable "nfs_path" {
  type        = string
  description = "kubeflowConfig.nfs.path from config_kubeflow.yml, a placeholder there ({your_nfs_server_export_path}): give its value with -var or TRIALFORM_VAR_nfs_path"
}

platform "kubeflow" "default" {
  operator = "tfjob"
  image    = "msranni/nni:latest"
  nfs {
    server     = var.nfs_server
    path       = var.nfs_path
    mount_path = "/nfs"
    # mount_path: where trials see the share (NNI chose it itself)
  }
  worker {
    replicas = 2
    cpu      = 1
    memory   = "8196Mi"
    gpu      = 1
  }
  ps {
    replicas = 1
    cpu      = 1
    memory   = "8196Mi"
    gpu      = 0
  }
  # not converted: kubeflowConfig.apiVersion: trialform uses kubeflow.org/v1
}

search_space "example_mnist" {
  nni_file = "search_space.json"
}

experiment "example_mnist" {
  platform        = platform.kubeflow.default
  search_space    = search_space.example_mnist
  max_trials      = 20
  concurrency     = 2
  max_duration    = "1h"
  on_max_duration = "finish"
  objective {
    metric = "default"
    goal   = "maximize"
  }
  tuner "tpe" {
    multivariate = false
  }
  assessor "medianstop" {}
  trial {
    code_dir = "."
    command  = "python3 dist_mnist.py"
  }
  # not converted: authorName: trialform does not record an author
}
