search_space "s" {
  param "x" { uniform = [0, 1] }
}

experiment "a" {
  search_space = search_space.s
  max_trials   = experiment.b.max_trials
  trial { command = "echo ${param.x}" }
}

experiment "b" {
  search_space = search_space.s
  max_trials   = experiment.a.max_trials + 1
  trial { command = "echo ${param.x}" }
}
