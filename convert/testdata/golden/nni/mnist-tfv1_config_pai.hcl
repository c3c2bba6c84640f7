# Converted by `trialform convert nni` from config_pai.yml (NNI v1 schema).
# Fields trialform has no place for are listed as "not converted" comments.

variable "openpai_token" {
  type        = string
  description = "paiConfig.token from config_pai.yml (a secret: give it with -var or TRIALFORM_VAR_openpai_token)"
  sensitive   = true
}

variable "openpai_local_storage_mount_point" {
  type        = string
  description = "trial.nniManagerNFSMountPath from config_pai.yml, a placeholder there ({replace_to_your_nfs_mount_path}): give its value with -var or TRIALFORM_VAR_openpai_local_storage_mount_point"
}

variable "openpai_container_storage_mount_point" {
  type        = string
  description = "trial.containerNFSMountPath from config_pai.yml, a placeholder there ({replace_to_your_container_mount_path}): give its value with -var or TRIALFORM_VAR_openpai_container_storage_mount_point"
}

variable "openpai_storage_config_name" {
  type        = string
  description = "trial.paiStorageConfigName from config_pai.yml, a placeholder there ({replace_to_your_storage_config_name}): give its value with -var or TRIALFORM_VAR_openpai_storage_config_name"
}

platform "openpai" "default" {
  username                      = "username"
  token                         = var.openpai_token
  host                          = "10.10.10.10"
  trial_cpu_number              = 1
  trial_memory_size             = "8196mb"
  docker_image                  = "msranni/nni:latest"
  local_storage_mount_point     = var.openpai_local_storage_mount_point
  container_storage_mount_point = var.openpai_container_storage_mount_point
  storage_config_name           = var.openpai_storage_config_name
}

search_space "example_mnist" {
  nni_file = "search_space.json"
}

experiment "example_mnist" {
  platform        = platform.openpai.default
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
  }
  # not converted: authorName: trialform does not record an author
}
