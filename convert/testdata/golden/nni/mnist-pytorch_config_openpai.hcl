# Converted by `trialform convert nni` from config_openpai.yml (NNI v2 schema).
# Fields trialform has no place for are listed as "not converted" comments.

variable "openpai_username" {
  type        = string
  description = "trainingService.username from config_openpai.yml, a placeholder there ($${your user name}): give its value with -var or TRIALFORM_VAR_openpai_username"
}

variable "openpai_token" {
  type        = string
  description = "trainingService.token from config_openpai.yml (a secret: give it with -var or TRIALFORM_VAR_openpai_token)"
  sensitive   = true
}

variable "openpai_storage_config_name" {
  type        = string
  description = "trainingService.storageConfigName from config_openpai.yml, a placeholder there ($${your storage config name}): give its value with -var or TRIALFORM_VAR_openpai_storage_config_name"
}

variable "openpai_local_storage_mount_point" {
  type        = string
  description = "trainingService.localStorageMountPoint from config_openpai.yml, a placeholder there ($${NFS mount point on local machine}): give its value with -var or TRIALFORM_VAR_openpai_local_storage_mount_point"
}

variable "openpai_container_storage_mount_point" {
  type        = string
  description = "trainingService.containerStorageMountPoint from config_openpai.yml, a placeholder there ($${NFS mount point inside Docker container}): give its value with -var or TRIALFORM_VAR_openpai_container_storage_mount_point"
}

platform "openpai" "default" {
  host                          = "http://123.123.123.123"
  username                      = var.openpai_username
  token                         = var.openpai_token
  docker_image                  = "msranni/nni"
  trial_cpu_number              = 1
  trial_memory_size             = "8GB"
  storage_config_name           = var.openpai_storage_config_name
  local_storage_mount_point     = var.openpai_local_storage_mount_point
  container_storage_mount_point = var.openpai_container_storage_mount_point
}

search_space "config_openpai" {
  nni_file = "search_space.json"
}

experiment "config_openpai" {
  platform     = platform.openpai.default
  search_space = search_space.config_openpai
  max_trials   = 10
  concurrency  = 1
  objective {
    metric = "default"
    goal   = "maximize"
  }
  tuner "tpe" {
    multivariate = false
  }
  trial {
    command = "python3 mnist.py"
  }
}
