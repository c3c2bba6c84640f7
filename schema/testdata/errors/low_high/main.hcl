search_space "s" {
  param "ok" { uniform = [0, 1] }
  param "C" { uniform = [1, 0.1] }
}
