# Converted by `trialform convert nni` from config_adl.yml (NNI v1 schema).
# Fields trialform has no place for are listed as "not converted" comments.

platform "adaptdl" "default" {
  image = "petuum/train-demo:mnist-pytorch-adl"
  # trial.codeDir "." (the image's working directory): trialform ships this directory instead; set code_dir to run where the code is in the image
  resources {
    gpu = 1
  }
}

search_space "example_mnist_pytorch" {
  nni_file = "search_space.json"
}

experiment "example_mnist_pytorch" {
  platform        = platform.adaptdl.default
  search_space    = search_space.example_mnist_pytorch
  max_trials      = 10
  concurrency     = 1
  max_duration    = "1h"
  on_max_duration = "finish"
  objective {
    metric = "default"
    goal   = "maximize"
  }
  tuner "tpe" {
    multivariate = false
  }
  trial {
    command = "python3 mnist.py"
  }
  # not converted: authorName: trialform does not record an author
  # not converted: nniManagerIp: trials never connect back to trialform; it reads their results itself
  # not converted: logCollection: trialform reads trial logs from the platform itself
}
