package schema

import "github.com/trialform/trialform/providers/platforms"

// testPlatforms is the registry every test loads with, as the CLI does.
var testPlatforms = platforms.Registry()
