search_space "s" {
  param "x" { uniform = [0, 1] }
}

experiment "e" {
  search_space = search_space.s
  max_trials   = 0
  concurrency  = 1.5
  max_duration = "2 hours"
  objective {
    goal = "max"
  }
  trial {
    command      = "echo ${param.x}"
    metric_regex = "(\\w+)=([0-9.]+)"
  }
}
