# Converted by `trialform convert nni` from config_hybrid.yml (NNI v2 schema).
# Fields trialform has no place for are listed as "not converted" comments.

variable "remote_host_1" {
  type        = string
  description = "trainingService[1].machineList[0].host from config_hybrid.yml, a placeholder there ($${your server's IP or domain name}): give its value with -var or TRIALFORM_VAR_remote_host_1"
}

variable "remote_user_1" {
  type        = string
  description = "trainingService[1].machineList[0].user from config_hybrid.yml, a placeholder there ($${your user name}): give its value with -var or TRIALFORM_VAR_remote_user_1"
}

variable "aml_subscription_id" {
  type        = string
  description = "trainingService[2].subscriptionId from config_hybrid.yml, a placeholder there ($${your subscription ID}): give its value with -var or TRIALFORM_VAR_aml_subscription_id"
}

variable "aml_resource_group" {
  type        = string
  description = "trainingService[2].resourceGroup from config_hybrid.yml, a placeholder there ($${your resource group}): give its value with -var or TRIALFORM_VAR_aml_resource_group"
}

variable "aml_workspace_name" {
  type        = string
  description = "trainingService[2].workspaceName from config_hybrid.yml, a placeholder there ($${your workspace name}): give its value with -var or TRIALFORM_VAR_aml_workspace_name"
}

variable "aml_compute_target" {
  type        = string
  description = "trainingService[2].computeTarget from config_hybrid.yml, a placeholder there ($${your compute target}): give its value with -var or TRIALFORM_VAR_aml_compute_target"
}

variable "aml_local_storage_mount_point" {
  type        = string
  description = "local_storage_mount_point: the shared storage trialform and the jobs both mount, which NNI's aml configuration does not name: give it with -var or TRIALFORM_VAR_aml_local_storage_mount_point"
}

variable "aml_container_storage_mount_point" {
  type        = string
  description = "container_storage_mount_point: the shared storage trialform and the jobs both mount, which NNI's aml configuration does not name: give it with -var or TRIALFORM_VAR_aml_container_storage_mount_point"
}

platform "local" "default" {}

platform "remote" "default" {
  machine {
    host         = var.remote_host_1
    user         = var.remote_user_1
    ssh_key_file = "~/.ssh/id_rsa"
  }
}

platform "aml" "default" {
  image                         = "msranni/nni"
  subscription_id               = var.aml_subscription_id
  resource_group                = var.aml_resource_group
  workspace_name                = var.aml_workspace_name
  compute_target                = var.aml_compute_target
  local_storage_mount_point     = var.aml_local_storage_mount_point
  container_storage_mount_point = var.aml_container_storage_mount_point
}

platform "kubeflow" "default" {
  operator = "tfjob"
  image    = "msranni/nni"
  worker {}
  # not converted: trainingService[3].apiVersion: trialform uses kubeflow.org/v1
  # not converted: trainingService[3].storage: no storageType and no NFS server: an empty template; add an nfs block (server, path, mount_path) if the jobs need shared storage
  # not converted: trainingService[3].reuseMode: trialform starts one process, Job or object per trial
}

search_space "config_hybrid" {
  nni_file = "search_space.json"
}

experiment "config_hybrid" {
  platform = platform.local.default
  # NNI ran this experiment on several training services; trialform runs an experiment on one platform: the other platform blocks above are declared but unused
  search_space = search_space.config_hybrid
  max_trials   = 20
  concurrency  = 5
  objective {
    metric = "default"
    goal   = "maximize"
  }
  tuner "tpe" {
    multivariate = false
  }
  trial {
    command = "python3 mnist.py"
    # NNI's trialGpuNumber (v1 gpuNum) 0 hides every GPU from the trial: an empty CUDA_VISIBLE_DEVICES
    env = {
      CUDA_VISIBLE_DEVICES = ""
    }
  }
}
