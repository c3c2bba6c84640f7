# Six trials of an NNI trial script, each a TFJob of the Kubeflow training
# operator (kubeflow.org/v1) with two workers and a parameter server.
#   KUBECONFIG=... trialform apply -auto-approve -wait
#   trialform trials tf-demo
# Every replica gets the trial's parameters; the metrics are those of
# worker 0 (a TFJob without a chief), read from its pod log.

variable "namespace" {
  default     = "default"
  description = "The namespace the TFJobs go to."
}

variable "image" {
  default     = "python:3.11-slim"
  description = "The trial image: any image with python3 and /bin/sh (tensorflow/tensorflow for real training)."
}

variable "python" {
  default     = "python3"
  description = "The Python interpreter in the image."
}

platform "kubeflow" "tf" {
  operator  = "tfjob" # or "pytorchjob" (master and worker)
  namespace = var.namespace
  image     = var.image

  worker {
    replicas = 2
    cpu      = 0.5
    memory   = "256Mi"
  }
  ps {
    replicas = 1
    cpu      = 0.25
    memory   = "128Mi"
    command  = "${var.python} train.py --role ps"
  }
}

search_space "demo" {
  param "x" { uniform = [-5, 5] }
  param "lr" { loguniform = [0.0001, 1] }
}

experiment "tf-demo" {
  platform     = platform.kubeflow.tf
  search_space = search_space.demo

  objective {
    metric = "default"
    goal   = "minimize"
  }

  tuner "tpe" {
    seed = 11
  }

  max_trials  = 6
  concurrency = 3

  trial {
    command      = "${var.python} train.py --role worker"
    max_duration = "5m"
  }
}
