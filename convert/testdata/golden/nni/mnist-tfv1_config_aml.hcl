# Converted by `trialform convert nni` from config_aml.yml (NNI v1 schema).
# Fields trialform has no place for are listed as "not converted" comments.

variable "aml_subscription_id" {
  type        = string
  description = "amlConfig.subscriptionId from config_aml.yml, a placeholder there ($${replace_to_your_subscriptionId}): give its value with -var or TRIALFORM_VAR_aml_subscription_id"
}

variable "aml_resource_group" {
  type        = string
  description = "amlConfig.resourceGroup from config_aml.yml, a placeholder there ($${replace_to_your_resourceGroup}): give its value with -var or TRIALFORM_VAR_aml_resource_group"
}

variable "aml_workspace_name" {
  type        = string
  description = "amlConfig.workspaceName from config_aml.yml, a placeholder there ($${replace_to_your_workspaceName}): give its value with -var or TRIALFORM_VAR_aml_workspace_name"
}

variable "aml_compute_target" {
  type        = string
  description = "amlConfig.computeTarget from config_aml.yml, a placeholder there ($${replace_to_your_computeTarget}): give its value with -var or TRIALFORM_VAR_aml_compute_target"
}

variable "aml_local_storage_mount_point" {
  type        = string
  description = "local_storage_mount_point: the shared storage trialform and the jobs both mount, which NNI's aml configuration does not name: give it with -var or TRIALFORM_VAR_aml_local_storage_mount_point"
}

variable "aml_container_storage_mount_point" {
  type        = string
  description = "container_storage_mount_point: the shared storage trialform and the jobs both mount, which NNI's aml configuration does not name: give it with -var or TRIALFORM_VAR_aml_container_storage_mount_point"
}

platform "aml" "default" {
  subscription_id               = var.aml_subscription_id
  resource_group                = var.aml_resource_group
  workspace_name                = var.aml_workspace_name
  compute_target                = var.aml_compute_target
  image                         = "msranni/nni"
  local_storage_mount_point     = var.aml_local_storage_mount_point
  container_storage_mount_point = var.aml_container_storage_mount_point
}

search_space "example_mnist" {
  nni_file = "search_space.json"
}

experiment "example_mnist" {
  platform        = platform.aml.default
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
