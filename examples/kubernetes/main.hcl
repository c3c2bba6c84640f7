# Eight trials of an NNI trial script as Kubernetes Jobs.
#   KUBECONFIG=... trialform apply -auto-approve -wait
#   trialform trials k8s-demo
# The code dir (train.py) reaches the trials in a ConfigMap; results come
# back through the pod logs and the termination message.

variable "namespace" {
  default     = "default"
  description = "The namespace the trial Jobs go to."
}

variable "image" {
  default     = "python:3.11-slim"
  description = "The trial image: any image with python3 and /bin/sh."
}

variable "python" {
  default     = "python3"
  description = "The Python interpreter in the image."
}

platform "kubernetes" "cluster" {
  namespace = var.namespace
  image     = var.image
  resources {
    cpu    = 0.5
    memory = "256Mi"
  }
}

search_space "demo" {
  param "x" { uniform = [-5, 5] }
  param "lr" { loguniform = [0.0001, 1] }
  param "optimizer" { choice = ["sgd", "adam"] }
}

experiment "k8s-demo" {
  platform     = platform.kubernetes.cluster
  search_space = search_space.demo

  objective {
    metric = "default"
    goal   = "minimize"
  }

  tuner "tpe" {
    seed = 7
  }

  max_trials  = 8
  concurrency = 4

  trial {
    command      = "${var.python} train.py --optimizer ${param.optimizer}"
    max_duration = "5m"
  }
}
