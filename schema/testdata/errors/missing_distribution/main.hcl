search_space "s" {
  param "x" {}
  param "y" {
    uniform = [0, 1]
    normal  = [0, 1]
  }
}
