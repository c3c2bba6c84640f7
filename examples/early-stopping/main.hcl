# Early stopping on learning curves that cross (fast learners lead early and
# end lower): curvefitting extrapolates each running trial's curve and stops
# it when even the prediction is worse than 0.95 x the best final accuracy.
# On `go run ./bench/earlystop` this reaches the quality of full runs with at
# most half the trial-steps (see bench/tuners/RESULTS.md).
#   trialform apply -auto-approve -wait
#   trialform trials crossing -q status:early_stopped

variable "max_trials" {
  default     = 40
  description = "How many trials the experiment runs in all (stopped ones count)."
}

variable "epochs" {
  default     = 50
  description = "Epochs of a full trial; the assessor's epoch_num."
}

search_space "crossing" {
  param "x" { uniform = [0, 1] }
  param "lr" { loguniform = [0.001, 1] }
}

experiment "crossing" {
  search_space = search_space.crossing

  objective {
    goal = "maximize"
  }

  tuner "random" {
    seed = 1
  }

  assessor "curvefitting" {
    epoch_num  = var.epochs
    start_step = 8    # about epoch_num / 6: judge no earlier
    threshold  = 0.95 # stop when the predicted final < 0.95 x the best final
    min_trials = 3    # completed trials needed before any stop
  }

  max_trials  = var.max_trials
  concurrency = 2

  trial {
    command = "python3 train.py"
    env     = { EPOCHS = "${var.epochs}" }
  }
}
