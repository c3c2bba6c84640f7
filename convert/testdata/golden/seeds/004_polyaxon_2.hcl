# Converted by `trialform convert polyaxon` from polyaxonfile.yml (Polyaxon v0/v1 polyaxonfile).
# Fields trialform has no place for are listed as "not converted" comments.
# Polyaxon's tracking client (log_metrics) is not read: trials report results as NNI does,
# print `trialform: {"loss": 0.3}` lines, or lines that metric_regex matches.

variable "batch_size" {
  default     = 128
  description = "from params.batch_size"
}

variable "convolutions" {
  default = {
    conv1 = {
      kernels = [32, 32]
      size    = [2, 2]
      strides = [1, 1]
    }
    conv2 = {
      kernels = [64, 64]
      size    = [2, 2]
      strides = [1, 1]
    }
  }
  description = "from params.convolutions"
}

platform "kubernetes" "default" {
  image = "http://[私有仓库ip]/nvidia/pytorch:20.01-py3"
  node_selector = {
    "kubernetes.io/hostname" = "gpu_a"
  }
  resources {
    cpu = 2
    gpu = 1
  }
  # not converted: build.build_steps: trialform does not build images; build an image from http://[私有仓库ip]/nvidia/pytorch:20.01-py3 with:
  # RUN pip install PILLOW
  # RUN pip install scikit-learn
}

search_space "polyaxonfile" {
  # a single run: each param is its variable's one value
  param "batch_size" {
    choice = [var.batch_size]
  }
}

experiment "polyaxonfile" {
  platform     = platform.kubernetes.default
  search_space = search_space.polyaxonfile
  max_trials   = 1
  objective {
    # the polyaxonfile names no metric or goal to optimize: metric "default" (NNI's final result) and goal "maximize" assumed; set what the trials report
    metric = "default"
    goal   = "maximize"
  }
  trial {
    command = "python model.py --conv1_kernels=\"${jsonencode(var.convolutions.conv1.kernels)}\" --conv1_stides=\"${jsonencode(var.convolutions.conv1.strides)}\" --batch-size=${param.batch_size}"
  }
  # not converted: logging: trialform keeps trial logs in its own files
}
