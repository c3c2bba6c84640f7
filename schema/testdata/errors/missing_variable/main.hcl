variable "max_trials" {
  type = number
}

search_space "s" {
  param "x" { uniform = [0, 1] }
}

experiment "e" {
  search_space = search_space.s
  max_trials   = var.max_trials
  trial { command = "echo ${param.x}" }
}
