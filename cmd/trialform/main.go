// Command trialform is Terraform for hyperparameter-tuning experiments.
// All the work is in internal/command; main only exits with its status.
package main

import (
	"os"

	"github.com/trialform/trialform/internal/command"
)

func main() { os.Exit(command.Main()) }
