search_space "s" {
  param "x" { uniform = [0, 1] }
}

experiment "e" {
  search_space = search_space.s
  tuner "evolution" {
    population_size = 20
    sample_size     = 30
  }
  max_trials = 3
  trial { command = "echo ${param.x}" }
}
