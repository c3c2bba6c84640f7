search_space "s" {
  param "k" { choice = ["a", "b"] }
  param "n" { randint = [1, 3] }
}

experiment "e" {
  search_space = search_space.s
  tuner "grid" {}
  max_trials = 5
  trial { command = "echo ${param.k}" }
}
