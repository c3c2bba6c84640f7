variable "max_trials" {
default = 20
    description = "How many trials."
}

search_space "svm" {
  param "C" { uniform=[0.1,1] }
  param "kernel" { choice = ["linear","rbf"] }
}

experiment "svm" {
  search_space = search_space.svm
  max_trials = var.max_trials
  concurrency = 2
  trial {
    command = "python3 main.py --C ${param.C}"
  }
}
