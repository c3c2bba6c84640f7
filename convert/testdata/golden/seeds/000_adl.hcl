# Converted by `trialform convert nni` from config.yml (NNI v1 schema).
# Fields trialform has no place for are listed as "not converted" comments.

variable "image" {
  type        = string
  description = "trial.image from config.yml, a placeholder there (<image_tag>): give its value with -var or TRIALFORM_VAR_image"
}

platform "adaptdl" "default" {
  adaptive           = false
  image              = var.image
  image_pull_secrets = ["stagingsecret"]
  # trial.codeDir "." (the image's working directory): trialform ships this directory instead; set code_dir to run where the code is in the image
  resources {
    cpu    = 1
    memory = "8Gi"
    gpu    = 1
  }
  nfs {
    server     = "10.20.41.55"
    path       = "/"
    mount_path = "/nfs"
  }
  checkpoint {
    storage_class = "dfs"
    size          = "1Gi"
  }
}

search_space "minimal_adl" {
  nni_file = "search_space.json"
}

experiment "minimal_adl" {
  platform     = platform.adaptdl.default
  search_space = search_space.minimal_adl
  max_trials   = 2
  concurrency  = 2
  objective {
    metric = "default"
    goal   = "maximize"
  }
  tuner "grid" {}
  trial {
    command = "python main.py"
  }
  # not converted: authorName: trialform does not record an author
  # not converted: nniManagerIp: trials never connect back to trialform; it reads their results itself
  # not converted: logCollection: trialform reads trial logs from the platform itself
}
