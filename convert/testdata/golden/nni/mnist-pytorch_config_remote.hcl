# Converted by `trialform convert nni` from config_remote.yml (NNI v2 schema).
# Fields trialform has no place for are listed as "not converted" comments.

variable "remote_host_1" {
  type        = string
  description = "trainingService.machineList[0].host from config_remote.yml, a placeholder there ($${your server's IP or domain name}): give its value with -var or TRIALFORM_VAR_remote_host_1"
}

variable "remote_user_1" {
  type        = string
  description = "trainingService.machineList[0].user from config_remote.yml, a placeholder there ($${your user name}): give its value with -var or TRIALFORM_VAR_remote_user_1"
}

variable "remote_password_2" {
  type        = string
  description = "trainingService.machineList[1].password from config_remote.yml (a secret: give it with -var or TRIALFORM_VAR_remote_password_2)"
}

platform "remote" "default" {
  machine {
    host         = var.remote_host_1
    user         = var.remote_user_1
    ssh_key_file = "~/.ssh/id_rsa"
  }
  machine {
    host        = "123.123.123.123"
    port        = 10022
    user        = "nniuser"
    password    = var.remote_password_2
    python_path = "/usr/bin"
  }
}

search_space "config_remote" {
  nni_file = "search_space.json"
}

experiment "config_remote" {
  platform     = platform.remote.default
  search_space = search_space.config_remote
  max_trials   = 20
  concurrency  = 4
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
