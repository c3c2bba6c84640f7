package platforms

import (
	"fmt"
	"strings"

	"github.com/trialform/trialform/internal/decl"
	"github.com/trialform/trialform/providers/registry"
)

// Reference is every platform kind's reference, each under a heading
// (KindReference).
func Reference(r *registry.Registry) string {
	var b strings.Builder
	for _, k := range r.Kinds() {
		fmt.Fprintf(&b, "#### `platform %q`\n\n%s\n", k.Name, KindReference(r, k))
	}
	return b.String()
}

// Index is the list of platform kinds, each linked to its page
// (docs/platforms/KIND.md) with its summary.
func Index(r *registry.Registry) string {
	var b strings.Builder
	for _, k := range r.Kinds() {
		b.WriteString(decl.Wrap(fmt.Sprintf("[`%s`](%s.md): %s.", k.Name, k.Name, k.Summary), "- ", "  ", 100) + "\n")
	}
	return b.String()
}

// KindReference is the settings of one kind, written from the doc tags
// of its configuration struct: its summary, then one item per setting
// (what it takes and what it means). A kind that extends another lists
// only its own.
func KindReference(r *registry.Registry, k *registry.Kind) string {
	var b strings.Builder
	text := upper(k.Summary) + "."
	if k.Config == nil {
		return decl.Wrap(text, "", "", 100) + "\n"
	}
	s, err := decl.SchemaOf(k.Config())
	if err != nil {
		panic(err) // registry.New already refused it
	}
	var base *decl.Schema
	if k.Extends != "" {
		text += fmt.Sprintf(" It takes every setting of [`%s`](%s.md), and:", k.Extends, k.Extends)
		if e := r.Lookup(k.Extends); e != nil && e.Config != nil {
			base, _ = decl.SchemaOf(e.Config())
		}
	}
	b.WriteString(decl.Wrap(text, "", "", 100) + "\n\n")
	writeRows(&b, s, base, "")
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
		b.WriteString(decl.Wrap(fmt.Sprintf("`%s%s` (%s): %s", prefix, a.Name, what, doc), "- ", "  ", 100) + "\n")
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
		b.WriteString(decl.Wrap(fmt.Sprintf("`%s%s { }` (%s): %s", prefix, head, how, bl.Doc), "- ", "  ", 100) + "\n")
		writeRows(b, bl.Schema, nil, prefix+bl.Name+".")
	}
}

func upper(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
