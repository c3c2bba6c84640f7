platform "remote" "lab" {
  known_hosts = "kh"
  lost_grace  = "soon"
  machine {
    host = "10.0.0.5"
    prot = 22
  }
  machine {
    host       = "10.0.0.5"
    port       = 22
    max_trials = 0
  }
}
platform "remote" "empty" {
}
