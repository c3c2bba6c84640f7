package convert

import "github.com/trialform/trialform/providers/platforms"

// testPlatforms is the registry the converted files are loaded with.
var testPlatforms = platforms.Registry()
