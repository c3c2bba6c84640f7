experiment "svm" {
  search_space = search_space.s
  max_trials   = 4
  trial { command = "echo ${param.x}" }
}
