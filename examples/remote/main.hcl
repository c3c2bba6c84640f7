# Trials on machines reached over SSH (NNI's remote mode). Edit the
# defaults below (or pass -var host=... -var user=...), add the machine's
# host key to known_hosts (see README.md), then:
#   trialform plan
#   trialform apply -auto-approve -wait
#   trialform trials remote

variable "host" {
  default     = "10.0.0.5"
  description = "The machine trials run on (edit me)."
}

variable "port" {
  default = 22
}

variable "user" {
  default     = "alice"
  description = "The login on the machine (edit me)."
}

variable "ssh_key_file" {
  default     = "~/.ssh/id_ed25519"
  description = "Private key for the login (no passphrase; with one, use the SSH agent and set password/key to null)."
}

variable "known_hosts" {
  default = "~/.ssh/known_hosts"
}

variable "work_dir" {
  default     = "~/trialform"
  description = "Where trialform keeps code and trial dirs on the machine."
}

platform "remote" "lab" {
  known_hosts = var.known_hosts # host keys are verified: no silent trust
  work_dir    = var.work_dir
  lost_grace  = "2m" # an unreachable machine's trials are LOST (and resumed) after this

  machine {
    host         = var.host
    port         = var.port
    user         = var.user
    ssh_key_file = var.ssh_key_file
    max_trials   = 2 # trials at once on this machine (default: its CPU count)
    # gpu_indices        = [0, 1]            # schedule GPU trials (trial.gpus) on these
    # max_trials_per_gpu = 1
    # python_path        = "/opt/conda/bin"  # put first in PATH, as NNI does
  }

  # More machines: trials go where slots are free.
  # machine {
  #   host = "10.0.0.6"
  #   user = "alice"
  # }
}

search_space "remote" {
  param "lr" { loguniform = [0.0001, 0.1] }
  param "momentum" { uniform = [0, 0.99] }
  param "batch" { choice = [16, 32, 64] }
}

experiment "remote" {
  platform     = platform.remote.lab
  search_space = search_space.remote

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
    code_dir     = "." # uploaded once per experiment and machine (.trialformignore / .nniignore honoured)
    command      = "python3 train.py --batch ${param.batch}"
    max_duration = "5m"
  }
}
