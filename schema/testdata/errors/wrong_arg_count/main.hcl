search_space "s" {
  param "a" { uniform = [0] }
  param "b" { randint = [0.5, 3] }
  param "c" { normal = [0, 0] }
  param "d" { uniform = ["low", 1] }
}
