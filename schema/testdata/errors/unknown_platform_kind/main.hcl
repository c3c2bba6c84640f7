platform "slurm" "hpc" {
  partition = "gpu"
}
