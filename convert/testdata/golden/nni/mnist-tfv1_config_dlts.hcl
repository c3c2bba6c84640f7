# Converted by `trialform convert nni` from config_dlts.yml (NNI v1 schema).
# Fields trialform has no place for are listed as "not converted" comments.

variable "dlts_local_storage_mount_point" {
  type        = string
  description = "local_storage_mount_point: the shared storage trialform and the jobs both mount, which NNI's dlts configuration does not name: give it with -var or TRIALFORM_VAR_dlts_local_storage_mount_point"
}

variable "dlts_container_storage_mount_point" {
  type        = string
  description = "container_storage_mount_point: the shared storage trialform and the jobs both mount, which NNI's dlts configuration does not name: give it with -var or TRIALFORM_VAR_dlts_container_storage_mount_point"
}

platform "dlts" "default" {
  dashboard                     = "http://azure-eastus-p40-dev1-infra01.eastus.cloudapp.azure.com/"
  image                         = "msranni/nni:latest"
  local_storage_mount_point     = var.dlts_local_storage_mount_point
  container_storage_mount_point = var.dlts_container_storage_mount_point
}

search_space "example_mnist" {
  nni_file = "search_space.json"
}

experiment "example_mnist" {
  platform        = platform.dlts.default
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
  trial {
    command  = "python3 mnist.py"
    code_dir = "."
    gpus     = 1
  }
  # not converted: debug: trialform has no debug mode
  # not converted: authorName: trialform does not record an author
}
