search_space "s" {
  nni_file = "space.json"
}
