package tuner

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/trialform/trialform/internal/decl"
)

// The tuner and assessor reference of docs/tuners.md, written from the
// declarations (go test ./tuner -run TestReadmeTunerReference -update
// rewrites it; the test fails when it is stale).

// ReferenceTable is the list of tuners: name, settings with their
// defaults, the spaces each handles, what it does. defaultTuner is
// marked "(default)". (A list, not a table: the rows were too long to
// read.)
func ReferenceTable(r *Registry, defaultTuner string) string {
	var b strings.Builder
	for _, k := range r.Kinds() {
		name := "**`" + k.Name + "`**"
		if k.Name == defaultTuner {
			name += " (default)"
		}
		text := fmt.Sprintf("%s: %s Spaces: %s. Settings: %s.", name, sentence(k.Summary), k.Spaces, settingList(k.Schema()))
		b.WriteString(decl.Wrap(text, "- ", "  ", 100) + "\n")
	}
	return b.String()
}

// AssessorTable is the list of assessors.
func AssessorTable(r *Registry) string {
	var b strings.Builder
	for _, a := range r.Assessors() {
		text := fmt.Sprintf("**`%s`**: %s Settings: %s.", a.Name, sentence(a.Summary), settingList(a.Schema()))
		b.WriteString(decl.Wrap(text, "- ", "  ", 100) + "\n")
	}
	return b.String()
}

// sentence ends s with a full stop.
func sentence(s string) string {
	if strings.HasSuffix(s, ".") || strings.HasSuffix(s, ")") && strings.HasSuffix(strings.TrimSuffix(s, ")"), ".") {
		return s
	}
	return s + "."
}

// SettingsReference is one table per tuner and assessor: every setting,
// the values it takes, its default and what it means.
func SettingsReference(r *Registry) string {
	var b strings.Builder
	for _, k := range r.Kinds() {
		fmt.Fprintf(&b, "### `tuner %q`\n\n", k.Name)
		settingRows(&b, k.Schema())
	}
	for _, a := range r.Assessors() {
		fmt.Fprintf(&b, "### `assessor %q`\n\n", a.Name)
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
