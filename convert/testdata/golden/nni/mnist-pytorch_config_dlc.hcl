# Converted by `trialform convert nni` from config_dlc.yml (NNI v2 schema).
# Fields trialform has no place for are listed as "not converted" comments.

variable "data_dir" {
  type        = string
  description = "trialCommand from config_dlc.yml, a placeholder there ({your_data_dir}): give its value with -var or TRIALFORM_VAR_data_dir"
}

variable "dlc_nas_data_source_id" {
  type        = string
  description = "trainingService.nasDataSourceId from config_dlc.yml, a placeholder there ($${your_nas_data_source_id}): give its value with -var or TRIALFORM_VAR_dlc_nas_data_source_id"
}

platform "dlc" "default" {
  image                         = "registry-vpc.cn-beijing.aliyuncs.com/pai-dlc/pytorch-training:1.6.0-gpu-py37-cu101-ubuntu18.04"
  job_type                      = "PyTorchJob"
  pod_count                     = 1
  ecs_spec                      = "ecs.c6.large"
  region                        = "cn-hangzhou"
  nas_data_source_id            = var.dlc_nas_data_source_id
  local_storage_mount_point     = "/home/admin/workspace/"
  container_storage_mount_point = "/root/data/"
  # workspace_id: left out, NNI's config held the placeholder ${your_workspace_id}; optional, as in NNI: without it the jobs go to the default workspace
  # access_key_id: left out, NNI's config held the placeholder ${your_ak_id}; without it the platform reads ALIBABA_CLOUD_ACCESS_KEY_ID and ALIBABA_CLOUD_ACCESS_KEY_SECRET from the environment
  # access_key_secret: left out, NNI's config held the placeholder ${your_ak_key}; without it the platform reads ALIBABA_CLOUD_ACCESS_KEY_ID and ALIBABA_CLOUD_ACCESS_KEY_SECRET from the environment
  # oss_data_source_id: left out, NNI's config held the placeholder ${your_oss_data_source_id}; optional, as in NNI: set it when the data is on OSS
  # not converted: trainingService.type: the DLC node type: trialform's dlc jobs have one kind of node, Worker (NNI's default)
}

search_space "config_dlc" {
  nni_file = "search_space.json"
}

experiment "config_dlc" {
  platform     = platform.dlc.default
  search_space = search_space.config_dlc
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
    command = "python mnist.py --data_dir /root/data/${var.data_dir}"
  }
}
