variable "n" { type = number }
variable "host" {}
variable "lrs" { type = list(number) }
variable "tok" {
  type      = string
  sensitive = true
}

platform "remote" "lab" {
  machine {
    host = var.host
    user = "me"
    prot = 22
  }
}

search_space "s" {
  param "lr" { choice = var.lrs }
  param "x" { uniform = [0, var.n] }
}

experiment "e" {
  platform     = platform.remote.lab
  search_space = search_space.s
  tuner "tpe" {}
  max_trials   = var.n
  concurrency  = var.n * 2
  trial {
    command = "python3 train.py --lr ${param.lr}"
    env     = { TOK = var.tok, N = tostring(var.n) }
  }
}

experiment "f" {
  search_space = search_space.s
  tuner "tpe" {}
  max_trials   = 0
  trial {
    command = "echo ${param.x}"
  }
}
