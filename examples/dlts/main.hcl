# Trials as DLTS (DLWorkspace) jobs (NNI's dlts mode). The code and each
# trial's parameters reach the jobs through a shared storage mounted both
# on this machine and in the jobs. Then:
#   TRIALFORM_VAR_password=... trialform plan -var dashboard=https://dlts.example.com/
#   trialform apply -auto-approve -wait
#   trialform trials dlts

variable "dashboard" {
  description = "The cluster's dashboard URL (edit me)."
  default     = "https://dlts.example.com/"
}

variable "team" {
  default = "my-team"
}

variable "email" {
  default = "alice@example.com"
}

variable "password" {
  description = "The user's password or job token: give it with TRIALFORM_VAR_password (or leave the attribute out and set DLTS_JOB_TOKEN)."
  sensitive   = true
}

variable "local_mount" {
  description = "Where the shared storage is mounted on this machine."
  default     = "/mnt/dlts"
}

variable "container_mount" {
  description = "Where the same storage is mounted in the jobs."
  default     = "/mnt/dlts"
}

platform "dlts" "lab" {
  dashboard                     = var.dashboard
  cluster                       = ".default"
  team                          = var.team
  email                         = var.email
  password                      = var.password # sensitive: never printed, never in the state
  image                         = "msranni/nni:latest"
  local_storage_mount_point     = var.local_mount
  container_storage_mount_point = var.container_mount
  # gpu_type                    = "P40" # default: the first the team's cluster lists
}

search_space "dlts" {
  param "lr" { loguniform = [0.0001, 0.1] }
  param "momentum" { uniform = [0, 0.99] }
}

experiment "dlts" {
  platform     = platform.dlts.lab
  search_space = search_space.dlts

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
    code_dir = "."
    command  = "python3 train.py"
    gpus     = 0 # DLTS's resourcegpu
  }
}
