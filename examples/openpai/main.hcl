# Trials as OpenPAI jobs (NNI's pai mode). The code and each trial's
# parameters reach the jobs through a shared storage (NFS) mounted both on
# this machine and in the jobs. Then:
#   TRIALFORM_VAR_token=... trialform plan -var host=https://pai.example.com -var username=alice
#   trialform apply -auto-approve -wait
#   trialform trials openpai

variable "host" {
  description = "OpenPAI's address (edit me)."
  default     = "https://pai.example.com"
}

variable "username" {
  description = "The OpenPAI user the jobs run as."
  default     = "alice"
}

variable "token" {
  description = "An OpenPAI access token of that user: give it with TRIALFORM_VAR_token."
  sensitive   = true
}

variable "local_mount" {
  description = "Where the shared storage is mounted on this machine."
  default     = "/mnt/nfs"
}

variable "container_mount" {
  description = "Where the same storage is mounted in the jobs (the storage config's mount point)."
  default     = "/mnt/nfs"
}

platform "openpai" "lab" {
  host                          = var.host
  username                      = var.username
  token                         = var.token # sensitive: never printed, never in the state
  virtual_cluster               = "default"
  docker_image                  = "msranni/nni:latest"
  trial_cpu_number              = 2
  trial_memory_size             = "8gb"
  local_storage_mount_point     = var.local_mount
  container_storage_mount_point = var.container_mount
  # storage_config_name         = "nfs-storage" # the OpenPAI storage config that mounts it
}

search_space "openpai" {
  param "lr" { loguniform = [0.0001, 0.1] }
  param "momentum" { uniform = [0, 0.99] }
}

experiment "openpai" {
  platform     = platform.openpai.lab
  search_space = search_space.openpai

  objective {
    metric = "default"
    goal   = "minimize"
  }

  tuner "tpe" {
    seed = 7
  }

  max_trials  = 8
  concurrency = 2

  trial {
    code_dir     = "." # copied to the shared storage once per content
    command      = "python3 train.py"
    max_duration = "30m" # trialform stops a job that runs longer
  }
}
