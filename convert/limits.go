package convert

import (
	"bytes"
	"fmt"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// maxAliasNodes bounds what YAML aliases may add to a document: the nodes
// that the aliases stand for, counted as if each were written out. Real
// configurations share a few small mappings (a resources block, a volume);
// a "billion laughs" document of a few hundred bytes stands for billions
// of nodes, and converting it would exhaust memory.
//
// yaml.v3 limits alias expansion only when it decodes into Go values; a
// yaml.Node keeps aliases as pointers, and the converters follow them, so
// the limit is checked here, before any conversion.
const maxAliasNodes = 100_000

// checkAliases walks the document once and fails at the alias that takes
// the expansion past maxAliasNodes, or at an alias inside its own anchor
// (which would expand for ever).
func checkAliases(name string, root *yaml.Node) error {
	const inProgress = -1
	size := map[*yaml.Node]int{} // expanded node count of a subtree
	var expanded func(n *yaml.Node, via *yaml.Node) (int, error)
	expanded = func(n, via *yaml.Node) (int, error) {
		if n.Kind == yaml.AliasNode {
			via = n
			n = n.Alias
			if n == nil {
				return 1, nil
			}
		}
		switch s := size[n]; {
		case s == inProgress:
			return 0, &Error{File: name, Line: via.Line, Msg: fmt.Sprintf("the alias *%s is inside its own anchor &%s, so it never ends; write the value out", via.Value, via.Value)}
		case s > 0:
			return s, nil
		}
		size[n] = inProgress
		total := 1
		for _, ch := range n.Content {
			s, err := expanded(ch, via)
			if err != nil {
				return 0, err
			}
			total += s
			if total > maxAliasNodes {
				total = maxAliasNodes + 1 // enough to fail; keeps the sum from overflowing
			}
		}
		size[n] = total
		return total, nil
	}
	added := 0
	var walk func(n *yaml.Node) error
	walk = func(n *yaml.Node) error {
		if n.Kind == yaml.AliasNode {
			s, err := expanded(n, n)
			if err != nil {
				return err
			}
			added += s
			if added > maxAliasNodes {
				return &Error{File: name, Line: n.Line, Msg: fmt.Sprintf("the YAML aliases (*name) up to here expand to more than %d values, far more than a real configuration holds; convert stops rather than exhaust memory: write the shared values out, or share fewer", maxAliasNodes)}
			}
			return nil
		}
		for _, ch := range n.Content {
			if err := walk(ch); err != nil {
				return err
			}
		}
		return nil
	}
	return walk(root)
}

// checkText fails at the first byte that YAML does not accept in UTF-8
// text: an invalid UTF-8 sequence or a control character. yaml.v3 reports
// both without a line. A document in UTF-16 (it starts with a byte order
// mark) is left to yaml.v3.
func checkText(name string, data []byte) error {
	if bytes.HasPrefix(data, []byte{0xFE, 0xFF}) || bytes.HasPrefix(data, []byte{0xFF, 0xFE}) {
		return nil
	}
	line, col := 1, 1
	for i := 0; i < len(data); {
		r, n := utf8.DecodeRune(data[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			return &Error{File: name, Line: line, Msg: fmt.Sprintf("column %d: byte 0x%02X is not UTF-8 text; save the file as UTF-8", col, data[i])}
		case !yamlPrintable(r):
			return &Error{File: name, Line: line, Msg: fmt.Sprintf("column %d: the control character %U is not allowed in YAML; remove it", col, r)}
		}
		if r == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
		i += n
	}
	return nil
}

// yamlPrintable is YAML 1.2's set of characters a stream may hold.
func yamlPrintable(r rune) bool {
	switch {
	case r == '\t' || r == '\n' || r == '\r':
		return true
	case r >= 0x20 && r <= 0x7E:
		return true
	case r == 0x85:
		return true
	case r >= 0xA0 && r <= 0xD7FF:
		return true
	case r >= 0xE000 && r <= 0xFFFD:
		return true
	case r >= 0x10000 && r <= 0x10FFFF:
		return true
	}
	return false
}
