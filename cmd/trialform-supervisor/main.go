// Command trialform-supervisor is the local platform's trial supervisor on
// its own: the same code as `trialform __supervise DIR`, in a binary a
// tenth of the size (no HCL, client-go or SSH), so it starts faster for
// every trial. trialform uses it when it lies next to the trialform
// executable (make build puts both in bin/), and runs itself otherwise.
package main

import (
	"os"

	"github.com/trialform/trialform/providers/local"
)

func main() { os.Exit(local.SupervisorMain(os.Args[1:])) }
