package tuner

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/trialform/trialform/internal/decl"
)

// The README's tuner and assessor reference, written from the
// declarations (go test ./tuner -run TestReadmeTunerReference -update
// rewrites it; the test fails when it is stale).

// ReferenceTable is the table of tuners: name, settings with their
// defaults, the spaces each handles, what it does. defaultTuner is
// marked "(default)".
func ReferenceTable(r *Registry, defaultTuner string) string {
	var b strings.Builder
	b.WriteString("| tuner | settings | spaces | what it does |\n|---|---|---|---|\n")
	for _, k := range r.Kinds() {
		name := "`" + k.Name + "`"
		if k.Name == defaultTuner {
			name += " (default)"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", name, cell(settingList(k.Schema())), cell(k.Spaces), cell(k.Summary))
	}
	return b.String()
}

// AssessorTable is the table of assessors.
func AssessorTable(r *Registry) string {
	var b strings.Builder
	b.WriteString("| assessor | settings | rule |\n|---|---|---|\n")
	for _, a := range r.Assessors() {
		fmt.Fprintf(&b, "| `%s` | %s | %s |\n", a.Name, cell(settingList(a.Schema())), cell(a.Summary))
	}
	return b.String()
}

// SettingsReference is one table per tuner and assessor: every setting,
// the values it takes, its default and what it means.
func SettingsReference(r *Registry) string {
	var b strings.Builder
	for _, k := range r.Kinds() {
		fmt.Fprintf(&b, "#### `tuner %q`\n\n", k.Name)
		settingRows(&b, k.Schema())
	}
	for _, a := range r.Assessors() {
		fmt.Fprintf(&b, "#### `assessor %q`\n\n", a.Name)
		settingRows(&b, a.Schema())
	}
	return b.String()
}

// settingList is "`seed`, `startup_trials` (10), `max_budget` (required)".
func settingList(s *decl.Schema) string {
	var parts []string
	for _, a := range s.Attrs {
		p := "`" + a.Name + "`"
		switch {
		case a.Required:
			p += " (required)"
		case a.Default != "" && a.Default != "the experiment's seed":
			p += " (" + defaultWords(a) + ")"
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, ", ")
}

func settingRows(b *strings.Builder, s *decl.Schema) {
	b.WriteString("| setting | value | default | meaning |\n|---|---|---|---|\n")
	for _, a := range s.Attrs {
		def := defaultWords(a)
		if a.Required {
			def = "**required**"
		}
		if def == "" {
			def = "—"
		}
		fmt.Fprintf(b, "| `%s` | %s | %s | %s |\n", a.Name, cell(valueWords(a)), cell(def), cell(a.Doc))
	}
	b.WriteString("\n")
}

// valueWords is what values an attribute takes: "a whole number in
// [1, 10000]", `"ei", "ucb" or "poi"`.
func valueWords(a *decl.Attr) string {
	switch {
	case len(a.OneOf) > 0:
		return decl.QuotedOr(a.OneOf)
	case a.Range != nil:
		return a.What + " " + a.Range.Symbols()
	}
	return a.What
}

// defaultWords is the default tag, quoted for a string setting that
// takes certain values ("ei").
func defaultWords(a *decl.Attr) string {
	if len(a.OneOf) > 0 || a.What == "a string" && a.Default != "" {
		return strconv.Quote(a.Default)
	}
	return a.Default
}

func cell(s string) string { return strings.ReplaceAll(s, "|", `\|`) }
