package schema

import (
	"fmt"
	"strings"

	"github.com/hashicorp/hcl/v2"

	"github.com/trialform/trialform/internal/didyoumean"
)

// bodyContent is body.Content(s) whose "Unsupported argument" and
// "Unsupported block type" diagnostics name the closest valid name by
// internal/didyoumean, as every other message does: HCL suggests only
// names within 2 edits, by case, and says nothing otherwise ("An argument
// named "max_failed_trail" is not expected here.").
func bodyContent(body hcl.Body, s *hcl.BodySchema) (*hcl.BodyContent, hcl.Diagnostics) {
	c, diags := body.Content(s)
	var attrs, blocks []string
	for _, a := range s.Attributes {
		attrs = append(attrs, a.Name)
	}
	for _, b := range s.Blocks {
		blocks = append(blocks, b.Type)
	}
	for _, d := range diags {
		var name string
		var cands []string
		var format string
		switch d.Summary {
		case "Unsupported argument":
			if _, err := fmt.Sscanf(d.Detail, "An argument named %q", &name); err != nil {
				continue
			}
			cands, format = attrs, "%q"
			if didyoumean.Suggest(name, cands) == "" {
				// An argument written where a block is meant.
				cands, format = blocks, "a block of type %q"
			}
		case "Unsupported block type":
			if _, err := fmt.Sscanf(d.Detail, "Blocks of type %q", &name); err != nil {
				continue
			}
			cands, format = blocks, "%q"
		default:
			continue
		}
		// HCL's own suggestion (its own edit distance, case-sensitive,
		// within 2 edits) gives way to the one rule every message uses.
		if i := strings.Index(d.Detail, " Did you mean"); i >= 0 {
			d.Detail = d.Detail[:i]
		}
		d.Detail += didyoumean.Sentence(name, cands, format)
	}
	return c, diags
}
