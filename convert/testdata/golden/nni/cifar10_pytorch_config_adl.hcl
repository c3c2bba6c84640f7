# Converted by `trialform convert nni` from config_adl.yml (NNI v1 schema).
# Fields trialform has no place for are listed as "not converted" comments.

platform "adaptdl" "default" {
  adaptive  = true
  image     = "petuum/nni:cifar-example"
  namespace = "default"
  code_dir  = "/cifar10"
  resources {
    cpu    = 1
    memory = "1Gi"
    gpu    = 1
  }
  checkpoint {
    storage_class = "microk8s-hostpath"
    size          = "1Gi"
  }
}

search_space "example_pytorch_cifar10" {
  nni_file = "search_space_adl.json"
}

experiment "example_pytorch_cifar10" {
  platform        = platform.adaptdl.default
  search_space    = search_space.example_pytorch_cifar10
  max_trials      = 10
  concurrency     = 1
  max_duration    = "100h"
  on_max_duration = "finish"
  objective {
    metric = "default"
    goal   = "maximize"
  }
  tuner "tpe" {
    multivariate = false
  }
  trial {
    command = "python3 /cifar10/main_adl.py"
  }
  # not converted: authorName: trialform does not record an author
  # not converted: nniManagerIp: trials never connect back to trialform; it reads their results itself
  # not converted: logCollection: trialform reads trial logs from the platform itself
}
