search_space "s" {
  param "x" { uniform = [0, 1] }
}

experiment "svm" {
  search_space = search_space.s
  max_trials   = 3
  trial { command = "echo ${param.x}" }
}
