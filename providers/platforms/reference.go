package platforms

import (
	"fmt"
	"strings"

	"github.com/trialform/trialform/internal/decl"
	"github.com/trialform/trialform/providers/registry"
)

// Reference is the README's platform reference, written from the
// registered kinds and the doc tags of their configuration structs.
func Reference(r *registry.Registry) string {
	var b strings.Builder
	for _, k := range r.Kinds() {
		fmt.Fprintf(&b, "#### `platform %q`\n\n%s.", k.Name, upper(k.Summary))
		if k.Config == nil {
			b.WriteString("\n\n")
			continue
		}
		s, err := decl.SchemaOf(k.Config())
		if err != nil {
			panic(err) // registry.New already refused it
		}
		var base *decl.Schema
		if k.Extends != "" {
			fmt.Fprintf(&b, " It takes every setting of `%s`, and:", k.Extends)
			if e := r.Lookup(k.Extends); e != nil && e.Config != nil {
				base, _ = decl.SchemaOf(e.Config())
			}
		}
		b.WriteString("\n\n| setting | value | meaning |\n|---|---|---|\n")
		writeRows(&b, s, base, "")
		b.WriteString("\n")
	}
	return b.String()
}

func writeRows(b *strings.Builder, s, base *decl.Schema, prefix string) {
	for _, a := range s.Attrs {
		if base != nil && base.AttrNamed(a.Name) != nil {
			continue
		}
		doc := a.Doc
		if a.Sensitive {
			doc = "sensitive (may come from a sensitive variable); " + doc
		}
		if a.Required {
			doc = "**required**; " + doc
		}
		what := a.What
		if a.Whole && what == "a whole number" && a.Min != nil {
			what = fmt.Sprintf("a whole number >= %d", *a.Min)
		}
		fmt.Fprintf(b, "| `%s%s` | %s | %s |\n", prefix, a.Name, cell(what), cell(doc))
	}
	for _, bl := range s.Blocks {
		if base != nil && base.BlockNamed(bl.Name) != nil {
			continue
		}
		head := bl.Name
		if bl.Schema.Label != "" {
			head += ` "` + strings.ToUpper(bl.Schema.Label) + `"`
		}
		how := "block, at most one"
		switch {
		case bl.Many:
			how = "block, repeatable"
		case bl.Required:
			how = "block, required"
		}
		fmt.Fprintf(b, "| `%s%s { }` | %s | %s |\n", prefix, head, how, cell(bl.Doc))
		writeRows(b, bl.Schema, nil, prefix+bl.Name+".")
	}
}

func cell(s string) string {
	return strings.ReplaceAll(s, "|", `\|`)
}

func upper(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
