search_space "s" {
  param "x" { choice = [1, 2] }
}
experiment "e" {
  search_space     = search_space.s
  tuner "grid" {}
  max_trials       = 2
  max_failed_trail = 3
  trial {
    command = "true"
  }
  objectiv {
    metric = "loss"
  }
}
