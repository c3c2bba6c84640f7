search_space "s" {
  param "k" { choice = ["a", "a", "b"] }
  param "n" {
    choice = [
      1,
      "1",
      1.0,
    ]
  }
  param "ok" { choice = [true, "true", 1, "1", 2, 2.5] }
}

experiment "e" {
  search_space = search_space.s
  tuner "grid" {}
  max_trials = 2
  trial { command = "echo ${param.k} ${param.n} ${param.ok}" }
}
