# Seed 003's PAI-DLC setup (NNI's mnist-pytorch in dlc mode): ten trials,
# one at a time (DLC's public cluster allows few concurrent jobs), each a
# PyTorchJob on one ecs.c6.large pod, tuned with TPE. Code and parameters
# go through the NAS that this machine (a PAI-DSW server) and the DLC
# containers both mount; metrics come from the pod's log.
#   export TRIALFORM_VAR_access_key_id=... TRIALFORM_VAR_access_key_secret=...
#   trialform apply -auto-approve -wait -var nas_data_source_id=data...
#   trialform trials mnist-dlc

variable "access_key_id" {
  sensitive   = true
  description = "An Alibaba Cloud AccessKey ID (or leave both keys unset and export ALIBABA_CLOUD_ACCESS_KEY_ID)."
  default     = ""
}

variable "access_key_secret" {
  sensitive   = true
  description = "Its AccessKey secret (or export ALIBABA_CLOUD_ACCESS_KEY_SECRET)."
  default     = ""
}

variable "nas_data_source_id" {
  description = "The NAS data source of the DLC jobs, e.g. datat56by9n1xt0a (PAI console, datasets)."
}

variable "oss_data_source_id" {
  description = "An OSS data source the jobs also mount, for data on OSS (\"\": none)."
  default     = ""
}

variable "local_storage_mount_point" {
  description = "Where the NAS is mounted on this machine (a PAI-DSW server's default)."
  default     = "/home/admin/workspace/"
}

variable "container_storage_mount_point" {
  description = "Where the same NAS is mounted in the DLC containers."
  default     = "/root/data/"
}

variable "endpoint" {
  description = "The DLC OpenAPI endpoint (\"\": pai-dlc.REGION.aliyuncs.com)."
  default     = ""
}

variable "python" {
  default     = "python"
  description = "The Python interpreter in the image."
}

platform "dlc" "hangzhou" {
  job_type                      = "PyTorchJob"
  image                         = "registry-vpc.cn-beijing.aliyuncs.com/pai-dlc/pytorch-training:1.6.0-gpu-py37-cu101-ubuntu18.04"
  pod_count                     = 1
  ecs_spec                      = "ecs.c6.large"
  region                        = "cn-hangzhou"
  nas_data_source_id            = var.nas_data_source_id
  oss_data_source_id            = var.oss_data_source_id
  access_key_id                 = var.access_key_id
  access_key_secret             = var.access_key_secret
  endpoint                      = var.endpoint
  local_storage_mount_point     = var.local_storage_mount_point
  container_storage_mount_point = var.container_storage_mount_point
}

search_space "mnist" {
  param "batch_size" { choice = [16, 32, 64, 128] }
  param "hidden_size" { choice = [128, 256, 512, 1024] }
  param "lr" { choice = [0.0001, 0.001, 0.01, 0.1] }
  param "momentum" { uniform = [0, 1] }
}

experiment "mnist-dlc" {
  platform     = platform.dlc.hangzhou
  search_space = search_space.mnist

  objective {
    metric = "default"
    goal   = "maximize"
  }

  tuner "tpe" {}

  max_trials  = 10
  concurrency = 1

  trial {
    command = "${var.python} train.py"
  }
}
