variable "n" { default = 3 }
locals { cmd = "echo" }

search_space "svm" {
  param "x" { uniform = [0, 1] }
}

experiment "e" {
  platform     = platform.local.defualt
  search_space = search_space.svn
  max_trials   = var.m
  trial { command = "${local.cmdd} ${param.x}" }
}
