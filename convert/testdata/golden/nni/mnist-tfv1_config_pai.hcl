# Converted by `trialform convert nni` from config_pai.yml (NNI v1 schema).
# Fields trialform has no place for are listed as "not converted" comments.

variable "openpai_token" {
  type        = string
  description = "paiConfig.token from config_pai.yml (a secret: give it with -var or TRIALFORM_VAR_openpai_token)"
}

variable "openpai_nni_manager_nfs_mount_path" {
  type        = string
  description = "trial.nniManagerNFSMountPath from config_pai.yml, a placeholder there ({replace_to_your_nfs_mount_path}): give its value with -var or TRIALFORM_VAR_openpai_nni_manager_nfs_mount_path"
}

variable "openpai_container_nfs_mount_path" {
  type        = string
  description = "trial.containerNFSMountPath from config_pai.yml, a placeholder there ({replace_to_your_container_mount_path}): give its value with -var or TRIALFORM_VAR_openpai_container_nfs_mount_path"
}

variable "openpai_pai_storage_config_name" {
  type        = string
  description = "trial.paiStorageConfigName from config_pai.yml, a placeholder there ({replace_to_your_storage_config_name}): give its value with -var or TRIALFORM_VAR_openpai_pai_storage_config_name"
}

platform "openpai" "default" {
  # trialform does not run the openpai platform yet: validate accepts this block, plan and apply refuse it
  user_name                  = "username"
  token                      = var.openpai_token
  host                       = "10.10.10.10"
  cpu_num                    = 1
  memory_mb                  = 8196
  image                      = "msranni/nni:latest"
  nni_manager_nfs_mount_path = var.openpai_nni_manager_nfs_mount_path
  container_nfs_mount_path   = var.openpai_container_nfs_mount_path
  pai_storage_config_name    = var.openpai_pai_storage_config_name
}

search_space "example_mnist" {
  nni_file = "search_space.json"
}

experiment "example_mnist" {
  platform     = platform.openpai.default
  search_space = search_space.example_mnist
  max_trials   = 10
  concurrency  = 1
  max_duration = "1h"
  objective {
    metric = "default"
    goal   = "maximize"
  }
  tuner "tpe" {}
  trial {
    command  = "python3 mnist.py"
    code_dir = "."
  }
  # not converted: authorName: trialform does not record an author
}
