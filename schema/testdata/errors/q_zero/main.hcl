search_space "s" {
  param "units" { quniform = [32, 256, 0] }
}
