// Package decl reads settings that are declared as tagged Go structs (a
// platform's, a tuner's, an assessor's, a state backend's) and decodes
// values into them: one schema reader, one value check and one decoder for
// every kind of block, so they all give the same messages and the docs'
// references can be generated from the same declarations (rclone's
// fs.Options and a Terraform provider's schema are the models).
//
// Struct tags on a settings struct:
//
//	hcl:"name,optional"  an attribute ("name,attr" when required)
//	hcl:"name,block"     a nested block: *T at most one, []T any number
//	hcl:"name,label"     (in a block struct) the block's one label
//	doc:"..."            what it means, for the references
//	type:"..."           how a value looks, for messages ("a quantity string")
//	min:"N"              (whole numbers) the least value
//	range:"(0, 1]"       (numbers) the values allowed, as an interval: "[1,)"
//	                     is at least 1, "(0,)" more than 0, "[0, 1]" from 0
//	                     to 1; a round bracket leaves the end out
//	oneof:"ei ucb poi"   (strings) the values allowed
//	default:"..."        the default, for the references only: the struct a
//	                     kind's Config returns holds the real one (a test of
//	                     each list checks that the two agree)
//	sensitive:"true"     the value may come from a sensitive variable (a
//	                     token): allowed there, kept out of plans and state
//
// Field types: string, bool, int, float64, time.Duration (written as a
// duration string), []string, []int, map[string]string, pointers to these
// (nil: not written), and any (a value of any type, converted to Go as
// encoding/json would).
//
// The package is pure (no I/O) and imports no other trialform package but
// internal/didyoumean, so the tuner package may use it.
package decl
