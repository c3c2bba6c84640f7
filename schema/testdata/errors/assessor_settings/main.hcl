search_space "s" {
  param "x" { uniform = [0, 1] }
}

experiment "e" {
  search_space = search_space.s
  tuner "tpe" {}
  assessor "curvefitting" {
    start_step = 3
  }
  max_trials = 3
  trial { command = "echo ${param.x}" }
}
