# Converted by `trialform convert nni` from config_frameworkcontroller.yml (NNI v1 schema).
# Fields trialform has no place for are listed as "not converted" comments.

variable "nfs_server" {
  type        = string
  description = "frameworkcontrollerConfig.nfs.server from config_frameworkcontroller.yml, a placeholder there ({your_nfs_server_ip}): give its value with -var or TRIALFORM_VAR_nfs_server"
}

variable "nfs_path" {
  type        = string
  description = "frameworkcontrollerConfig.nfs.path from config_frameworkcontroller.yml, a placeholder there ({your_nfs_server_export_path}): give its value with -var or TRIALFORM_VAR_nfs_path"
}

platform "frameworkcontroller" "default" {
  image = "msranni/nni:latest"
  nfs {
    server     = var.nfs_server
    path       = var.nfs_path
    mount_path = "/nfs"
    # mount_path: where trials see the share (NNI chose it itself)
  }
  task_role "worker" {
    task_number = 1
    cpu         = 1
    memory      = "8192Mi"
    gpu         = 1
    framework_attempt_completion_policy {
      min_failed_task_count    = 1
      min_succeeded_task_count = 1
    }
  }
}

search_space "example_mnist" {
  nni_file = "search_space.json"
}

experiment "example_mnist" {
  platform        = platform.frameworkcontroller.default
  search_space    = search_space.example_mnist
  max_trials      = 10
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
  assessor "medianstop" {}
  trial {
    code_dir = "."
    command  = "python3 mnist.py"
  }
  # not converted: authorName: trialform does not record an author
}
