search_space "s" {
  param "x" { uniform = [-5, 5] }
}

experiment "e" {
  search_space = search_space.s
  tuner "batch" {
    params = [{ x = 1 }, { x = 2 }, { x = 2 }]
  }
  max_trials = 5
  trial { command = "echo ${param.x}" }
}
