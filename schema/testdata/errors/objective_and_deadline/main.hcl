search_space "s" {
  param "x" { uniform = [0, 1] }
}

experiment "e" {
  search_space    = search_space.s
  max_trials      = 2
  max_duration    = "1h"
  on_max_duration = "drain"
  objective {
    metric   = "loss"
    goal     = "minimize"
    strategy = "lastest"
  }
  trial {
    command = "echo ${param.x}"
  }
}
