search_space "s" {
  param "x" { uniform = [0, 1] }
}

experiment "e" {
  search_space = search_space.s
  tuner "tpe" {
    startup_trails = 5
    candidates     = 0
    multivariate   = "yes please"
  }
  max_trials = 3
  trial { command = "echo ${param.x}" }
}
