search_space "svm" {
  param "C" { uniform = [0.1, 1] }
  param "kernel" { choice = ["linear", "rbf"] }
}

experiment "svm" {
  search_space = search_space.svm
  max_trials   = 3
  trial {
    command = "python3 main.py --C ${param.C} --gamma ${param.gamma}"
  }
}
