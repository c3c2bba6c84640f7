package schema

import (
	"fmt"
	"strconv"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// Quoting is the shell context a ${param.X} stands in within trial.command,
// found by parsing the command as shell (see shellQuoting). It decides how
// a value is quoted so that it reaches the trial as data, never as code.
type Quoting int

const (
	// QuoteWord: an unquoted part of a word (`--lr=${param.lr}`); the value
	// is written in single quotes.
	QuoteWord Quoting = iota
	// QuoteDouble: inside "..."; \ $ ` and " are backslash-escaped.
	QuoteDouble
	// QuoteSingle: inside '...'; each ' closes, escapes and reopens.
	QuoteSingle
	// QuoteHeredoc: in the body of an unquoted here-document (<<EOF);
	// \ $ and ` are backslash-escaped. A value with a newline is refused
	// (it could end the document early).
	QuoteHeredoc
	// QuoteHeredocLiteral: in the body of a quoted here-document
	// (<<'EOF'); written as is. A value with a newline is refused.
	QuoteHeredocLiteral
)

func (q Quoting) String() string {
	return [...]string{"an unquoted word", "double quotes", "single quotes", "a here-document", "a quoted here-document"}[q]
}

// quote writes value for context q. It fails only for a value that cannot
// be written safely there: one with a NUL byte (no shell argument can hold
// it), or a newline in a here-document.
func (q Quoting) quote(v string) (string, error) {
	if strings.IndexByte(v, 0) >= 0 {
		return "", fmt.Errorf("a value with a NUL byte cannot be passed to a command")
	}
	switch q {
	case QuoteWord:
		return ShellQuote(v), nil
	case QuoteDouble:
		var b strings.Builder
		for _, r := range v {
			if r == '\\' || r == '$' || r == '`' || r == '"' {
				b.WriteByte('\\')
			}
			b.WriteRune(r)
		}
		return b.String(), nil
	case QuoteSingle:
		return strings.ReplaceAll(v, "'", `'\''`), nil
	case QuoteHeredoc, QuoteHeredocLiteral:
		if strings.ContainsAny(v, "\n\r") {
			return "", fmt.Errorf("a value with a line break cannot go into %s (it could end the document early)", q)
		}
		if q == QuoteHeredocLiteral {
			return v, nil
		}
		var b strings.Builder
		for _, r := range v {
			if r == '\\' || r == '$' || r == '`' {
				b.WriteByte('\\')
			}
			b.WriteRune(r)
		}
		return b.String(), nil
	}
	return "", fmt.Errorf("unknown quoting %d", q)
}

// UnsafePlaceError says that the param segment Segment of a command stands
// where no quoting makes a value safe (inside $((...)), ${...}, `...`, a
// comment, a variable name, ...). Where says where, in words.
type UnsafePlaceError struct {
	Segment int
	Param   string
	Where   string
}

func (e *UnsafePlaceError) Error() string {
	return fmt.Sprintf("${param.%s} stands %s, where its value cannot be quoted safely", e.Param, e.Where)
}

// ShellQuoting parses the command template as a shell command line (bash
// syntax, a superset of what /bin/sh takes) with every ${param.X} replaced by
// a plain placeholder word, and returns for each segment the context it
// stands in (meaningful for param segments only). A command that does not
// parse is an error; so is a param in a place no quoting makes safe (an
// *UnsafePlaceError).
func (t *Template) ShellQuoting() ([]Quoting, error) {
	q, _, err := t.shellQuoting()
	return q, err
}

// heredoc is the here-document a param segment stands in the body of.
type heredoc struct {
	delim string // the delimiter word after quote removal
	dash  bool   // <<-: the shell strips leading tabs from each line
}

// ends reports whether a body line would end the document: the shell ends
// it at the first line that reads exactly the delimiter (after leading
// tabs for <<-), whatever the line was meant to hold.
func (h heredoc) ends(line string) bool {
	if h.dash {
		line = strings.TrimLeft(line, "\t")
	}
	return line == h.delim
}

// shellQuoting is ShellQuoting that also gives, for each param segment in
// a here-document's body, that document.
func (t *Template) shellQuoting() ([]Quoting, map[int]heredoc, error) {
	if t == nil {
		return nil, nil, nil
	}
	if t.IsLiteral() {
		return make([]Quoting, len(t.Segments)), nil, nil
	}
	var all strings.Builder
	for _, s := range t.Segments {
		all.WriteString(s.Literal)
	}
	// A placeholder that the literal text cannot contain: letters and
	// digits only, so it lexes as plain word text in every shell context.
	nonce := 0
	for strings.Contains(all.String(), placeholderPrefix(nonce)) {
		nonce++
	}
	prefix := placeholderPrefix(nonce)
	var src strings.Builder
	for i, s := range t.Segments {
		if s.Param == "" {
			src.WriteString(s.Literal)
			continue
		}
		src.WriteString(prefix + strconv.Itoa(i) + "X")
	}
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(src.String()), "")
	if err != nil {
		return nil, nil, fmt.Errorf("the command is not a valid shell command line: %s", stripPlaceholders(err.Error(), prefix, t))
	}
	quoting := make([]Quoting, len(t.Segments))
	docs := map[int]heredoc{}
	var doc *heredoc // the document of the literal being marked, if any
	found := make([]bool, len(t.Segments))
	var firstErr error
	var stack []syntax.Node
	mark := func(ph string, q Quoting, where string) {
		seg, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(ph, prefix), "X"))
		if seg < 0 || seg >= len(t.Segments) {
			return
		}
		if where != "" {
			if firstErr == nil {
				firstErr = &UnsafePlaceError{Segment: seg, Param: t.Segments[seg].Param, Where: where}
			}
			return
		}
		found[seg] = true
		quoting[seg] = q
		if doc != nil {
			docs[seg] = *doc
		}
	}
	syntax.Walk(f, func(n syntax.Node) bool {
		if n == nil {
			stack = stack[:len(stack)-1]
			return true
		}
		stack = append(stack, n)
		switch x := n.(type) {
		case *syntax.Lit:
			if !strings.Contains(x.Value, prefix) {
				return true
			}
			q, where := litContext(stack)
			doc = nil
			if where == "" && (q == QuoteHeredoc || q == QuoteHeredocLiteral) {
				if r, ok := stack[len(stack)-3].(*syntax.Redirect); ok {
					doc = &heredoc{delim: delimiterText(r.Word), dash: r.Op == syntax.DashHdoc}
				}
			}
			markLit(x.Value, prefix, q, where, mark)
			doc = nil
		case *syntax.SglQuoted:
			if !strings.Contains(x.Value, prefix) {
				return true
			}
			where := ancestorProblem(stack[:len(stack)-1])
			if x.Dollar && where == "" {
				where = "inside $'...'"
			}
			markLit(x.Value, prefix, QuoteSingle, where, mark)
		}
		return true
	})
	if firstErr != nil {
		return nil, nil, firstErr
	}
	for i, s := range t.Segments {
		if s.Param != "" && !found[i] {
			return nil, nil, &UnsafePlaceError{Segment: i, Param: s.Param, Where: "in a comment or another place the shell does not read as a word"}
		}
	}
	return quoting, docs, nil
}

// DelimiterError says that a value would make its line of a here-document
// read as the document's delimiter, so the shell would end the document
// there and run the lines after it as commands.
type DelimiterError struct {
	Line  string // the line as it would be written
	Delim string
}

func (e *DelimiterError) Error() string {
	if e.Line == e.Delim {
		return fmt.Sprintf("the value would make its line of the here-document read %q, its delimiter, which ends the document early (the lines after it would run as commands)", e.Line)
	}
	return fmt.Sprintf("the value would make its line of the here-document read %q, which ends a document delimited by %q early (the lines after it would run as commands)", e.Line, e.Delim)
}

// lineAround gives the line of s that holds the bytes [start, end), which
// hold no line break.
func lineAround(s string, start, end int) string {
	from := strings.LastIndexByte(s[:start], '\n') + 1
	to := len(s)
	if i := strings.IndexByte(s[end:], '\n'); i >= 0 {
		to = end + i
	}
	return s[from:to]
}

// delimiterText is a here-document delimiter after quote removal, the text
// the shell compares each body line with.
func delimiterText(w *syntax.Word) string {
	if w == nil {
		return ""
	}
	var b strings.Builder
	var lit func(v string)
	lit = func(v string) {
		for i := 0; i < len(v); i++ {
			if v[i] == '\\' && i+1 < len(v) {
				i++
			}
			b.WriteByte(v[i])
		}
	}
	for _, p := range w.Parts {
		switch x := p.(type) {
		case *syntax.Lit:
			lit(x.Value)
		case *syntax.SglQuoted:
			b.WriteString(x.Value)
		case *syntax.DblQuoted:
			for _, q := range x.Parts {
				if l, ok := q.(*syntax.Lit); ok {
					lit(l.Value)
				}
			}
		}
	}
	return b.String()
}

// markLit reports each placeholder of a raw literal, checking that no
// backslash escapes the character before it.
func markLit(raw, prefix string, q Quoting, where string, mark func(string, Quoting, string)) {
	for {
		i := strings.Index(raw, prefix)
		if i < 0 {
			return
		}
		w := where
		if w == "" && q != QuoteSingle && q != QuoteHeredocLiteral {
			n := 0
			for k := i - 1; k >= 0 && raw[k] == '\\'; k-- {
				n++
			}
			if n%2 == 1 {
				w = "right after a backslash"
			}
		}
		j := strings.IndexByte(raw[i+len(prefix):], 'X')
		end := i + len(prefix) + j + 1
		mark(raw[i:end], q, w)
		raw = raw[end:]
	}
}

func placeholderPrefix(nonce int) string { return "TFxPARAMx" + strconv.Itoa(nonce) + "x" }
func stripPlaceholders(msg, prefix string, t *Template) string {
	for i, s := range t.Segments {
		if s.Param != "" {
			msg = strings.ReplaceAll(msg, prefix+strconv.Itoa(i)+"X", "${param."+s.Param+"}")
		}
	}
	return msg
}

// litContext gives the quoting context of a literal (the last node of
// stack) or, in where, why a value cannot stand there.
func litContext(stack []syntax.Node) (Quoting, string) {
	if where := ancestorProblem(stack[:len(stack)-1]); where != "" {
		return 0, where
	}
	if len(stack) < 2 {
		return 0, "outside any word"
	}
	switch p := stack[len(stack)-2].(type) {
	case *syntax.DblQuoted:
		if p.Dollar {
			return 0, `inside $"..."`
		}
		return QuoteDouble, ""
	case *syntax.Word:
		if len(stack) < 3 {
			return 0, "outside any command"
		}
		switch g := stack[len(stack)-3].(type) {
		case *syntax.Redirect:
			heredoc := g.Op == syntax.Hdoc || g.Op == syntax.DashHdoc
			if heredoc && g.Hdoc == p {
				if quotedDelimiter(g.Word) {
					return QuoteHeredocLiteral, ""
				}
				return QuoteHeredoc, ""
			}
			if heredoc {
				return 0, "in a here-document delimiter"
			}
			if g.Word == p {
				return QuoteWord, ""
			}
		case *syntax.Assign:
			if g.Value == p {
				return QuoteWord, ""
			}
		case *syntax.CallExpr, *syntax.WordIter, *syntax.CaseClause, *syntax.CaseItem,
			*syntax.BinaryTest, *syntax.UnaryTest, *syntax.DeclClause:
			return QuoteWord, ""
		}
		return 0, "in a part of the command that is not a plain word"
	}
	return 0, "in a name (of a variable, function or file descriptor)"
}

// ancestorProblem says why a value cannot stand anywhere below the nodes
// of stack, or "".
func ancestorProblem(stack []syntax.Node) string {
	for _, n := range stack {
		switch x := n.(type) {
		case *syntax.ParamExp:
			return "inside a ${...} parameter expansion"
		case *syntax.ArithmExp, *syntax.ArithmCmd, *syntax.LetClause, *syntax.CStyleLoop:
			return "inside arithmetic ($((...)), ((...)) or let)"
		case *syntax.CmdSubst:
			if x.Backquotes {
				return "inside `...` (use $(...) instead)"
			}
		case *syntax.ExtGlob:
			return "inside an extended glob"
		case *syntax.Assign:
			if x.Index != nil {
				return "inside an array index"
			}
		}
	}
	return ""
}

// quotedDelimiter reports whether a here-document delimiter has any
// quoting, which makes the body literal.
func quotedDelimiter(w *syntax.Word) bool {
	if w == nil {
		return false
	}
	for _, p := range w.Parts {
		switch x := p.(type) {
		case *syntax.SglQuoted, *syntax.DblQuoted:
			return true
		case *syntax.Lit:
			if strings.Contains(x.Value, `\`) {
				return true
			}
		}
	}
	return false
}
