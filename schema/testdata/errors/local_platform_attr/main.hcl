platform "local" "default" {
  gpu_indexes = [0]
}
