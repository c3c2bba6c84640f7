# An SVM on scikit-learn's bundled digits data set (no download needed).
# Needs scikit-learn for /usr/bin/python3: `sudo apt-get install -y python3-sklearn`
# (the python3 first on PATH may be another interpreter that cannot see Debian's packages).

variable "python" {
  default = "/usr/bin/python3"
}

search_space "svm" {
  param "C" { loguniform = [0.01, 100] }
  param "gamma" { loguniform = [0.00001, 0.1] }
  param "kernel" { choice = ["rbf", "poly", "sigmoid"] }
}

experiment "digits_svm" {
  search_space = search_space.svm

  objective {
    metric = "accuracy"
    goal   = "maximize"
  }

  tuner "tpe" {
    seed = 7
  }

  max_trials        = 20
  concurrency       = 2
  max_failed_trials = 5

  trial {
    args         = [var.python, "svm.py", "--C", "${param.C}", "--gamma", "${param.gamma}", "--kernel", "${param.kernel}"]
    max_duration = "5m"
  }
}
