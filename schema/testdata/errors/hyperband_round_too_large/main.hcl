search_space "s" {
  param "x" { uniform = [0, 1] }
}

experiment "e" {
  search_space = search_space.s
  tuner "hyperband" {
    max_budget = 1e12
    min_budget = 1e-9
    eta        = 2
  }
  max_trials = 5
  trial { command = "echo ${param.x} ${param.TRIAL_BUDGET}" }
}
