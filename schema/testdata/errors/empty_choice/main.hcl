search_space "s" {
  param "kernel" { choice = [] }
}
