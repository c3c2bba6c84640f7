search_space "s" {
  param "lr" {
    loguniform = [0, 0.1]
  }
}
