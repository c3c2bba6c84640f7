# Converted by `trialform convert nni` from config.yml (NNI v2 schema).
# Fields trialform has no place for are listed as "not converted" comments.

variable "dlc_access_key_id" {
  type        = string
  description = "trainingService.accessKeyId from config.yml (a secret: give it with -var or TRIALFORM_VAR_dlc_access_key_id)"
  sensitive   = true
}

variable "dlc_access_key_secret" {
  type        = string
  description = "trainingService.accessKeySecret from config.yml (a secret: give it with -var or TRIALFORM_VAR_dlc_access_key_secret)"
  sensitive   = true
}

variable "dlc_nas_data_source_id" {
  type        = string
  description = "trainingService.nasDataSourceId from config.yml, a placeholder there ($${your_nas_data_source_id}): give its value with -var or TRIALFORM_VAR_dlc_nas_data_source_id"
}

variable "dlc_oss_data_source_id" {
  type        = string
  description = "trainingService.ossDataSourceId from config.yml, a placeholder there ($${your_oss_data_source_id}): give its value with -var or TRIALFORM_VAR_dlc_oss_data_source_id"
}

platform "dlc" "default" {
  image                         = "registry-vpc.cn-beijing.aliyuncs.com/pai-dlc/pytorch-training:1.6.0-gpu-py37-cu101-ubuntu18.04"
  job_type                      = "PyTorchJob"
  pod_count                     = 1
  ecs_spec                      = "ecs.c6.large"
  region                        = "cn-hangzhou"
  access_key_id                 = var.dlc_access_key_id
  access_key_secret             = var.dlc_access_key_secret
  nas_data_source_id            = var.dlc_nas_data_source_id
  oss_data_source_id            = var.dlc_oss_data_source_id
  local_storage_mount_point     = "/home/admin/workspace/"
  container_storage_mount_point = "/root/data/"
  # not converted: trainingService.type: the DLC node type: trialform's dlc jobs have one kind of node, Worker (NNI's default)
}

search_space "config" {
  nni_file = "search_space.json"
}

experiment "config" {
  platform     = platform.dlc.default
  search_space = search_space.config
  max_trials   = 10
  concurrency  = 1
  objective {
    metric = "default"
    goal   = "maximize"
  }
  tuner "tpe" {}
  trial {
    command = "python mnist.py --data_dir /root/data/{your_data_dir}"
  }
  # not converted: experimentWorkingDirectory: trialform keeps its state in .trialform/ beside the configuration
}
