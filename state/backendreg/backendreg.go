// Package backendreg is the shape of a state backend's registration, as
// providers/registry is a platform's: a kind name, typed settings the
// schema decodes from a top-level `backend "KIND" { ... }` block (the
// same struct tags as platform settings: hcl, doc, min, ...), and what
// opens the backend from them. state/backends lists the kinds trialform
// is built with; each backend package (state/pg, state/kubernetes)
// exports a Registration() Kind. It imports no backend, so every backend
// can import it.
package backendreg

import "github.com/trialform/trialform/state"

// Env is what a backend is opened with besides its settings.
type Env struct {
	// StateDir is the working copy's .trialform directory: the local
	// backend's home, and where any backend may keep a cache. The local
	// platform's trials live there whichever backend keeps the state.
	StateDir string
	// Getenv reads the environment (PG* variables, KUBECONFIG); tests
	// pass their own. nil means os.Getenv.
	Getenv func(string) string
	// Report is where a backend sends a message for people while it
	// works (its server cannot be reached; it is back), "state backend
	// NAME: ..."; the command layer passes its view's. nil: dropped.
	Report func(msg string)
}

// Kind is one kind of backend.
type Kind struct {
	// Name is the block's label: backend "NAME" { ... }.
	Name string
	// Summary is one line for the docs' reference and did-you-mean.
	Summary string
	// Config returns a new pointer to the kind's settings struct (tags as
	// providers/registry's), or nil when the block takes no settings.
	Config func() any
	// Open opens the backend with the decoded settings (what Config
	// returned, filled in). It connects lazily or fails with an error that
	// names the backend, where it tried to connect and what to do; it
	// never includes a credential in the error.
	Open func(cfg any, env Env) (state.Backend, error)
}
