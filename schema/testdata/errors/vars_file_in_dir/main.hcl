variable "n" {
  type = number
}

search_space "s" {
  param "x" { uniform = [0, 1] }
}

experiment "e" {
  search_space = search_space.s
  max_trials   = var.n
  trial {
    command = "echo ${param.x}"
  }
}
