search_space "s" {
  param "x" { uniform = [0, 1] }
}

experiment "e" {
  search_space = search_space.s
  tuner "random" {}
  assessor "medianstop" {
    percentile = 0
  }
  max_trials = 3
  trial { command = "echo ${param.x}" }
}
