package schema

import (
	"fmt"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// Bounds on how deeply an expression nests, checked on the tokens before
// a file is parsed. HCL's parser and evaluator recurse once per level: a
// 3 MB file of "((((…1…))))" or "1+1+1+…" (under MaxConfig) took 1.9 GB
// and crashed trialform with a fatal stack overflow, which no recover
// catches; under the controller a commit holding it crashed it again at
// every restart. Written configurations nest a few levels and chain a few
// operators.
const (
	// MaxNesting bounds brackets, braces, parentheses, quotes, heredocs
	// and template sequences open at once.
	MaxNesting = 64
	// MaxChain bounds the operators (unary, binary, conditional) and
	// index or attribute steps of one expression at one level of nesting.
	MaxChain = 256
)

// tooComplex returns an error diagnostic when src nests deeper than
// MaxNesting or chains more than MaxChain operators, nil otherwise
// (syntax errors are left to the parser).
func tooComplex(src []byte, name string) *hcl.Diagnostic {
	toks, _ := hclsyntax.LexConfig(src, name, hcl.InitialPos)
	// open holds the opening token of each level; chain the count of
	// operators at each level (chain[0]: outside any).
	var open []hclsyntax.TokenType
	chain := []int{0}
	for i := range toks {
		t := &toks[i]
		switch t.Type {
		case hclsyntax.TokenOBrace, hclsyntax.TokenOBrack, hclsyntax.TokenOParen, hclsyntax.TokenOQuote,
			hclsyntax.TokenOHeredoc, hclsyntax.TokenTemplateInterp, hclsyntax.TokenTemplateControl:
			if t.Type == hclsyntax.TokenOBrack {
				chain[len(chain)-1]++ // x[a][b]…: an index step
				if chain[len(chain)-1] > MaxChain {
					return complexityDiag(t.Range, fmt.Sprintf("This expression chains more than %d operators or index steps", MaxChain))
				}
			}
			open = append(open, t.Type)
			chain = append(chain, 0)
			if len(open) > MaxNesting {
				return complexityDiag(t.Range, fmt.Sprintf("This expression nests more than %d levels deep (brackets, braces, parentheses, quotes or template sequences)", MaxNesting))
			}
		case hclsyntax.TokenCBrace, hclsyntax.TokenCBrack, hclsyntax.TokenCParen, hclsyntax.TokenCQuote,
			hclsyntax.TokenCHeredoc, hclsyntax.TokenTemplateSeqEnd:
			if len(open) > 0 {
				open = open[:len(open)-1]
				chain = chain[:len(chain)-1]
			}
		case hclsyntax.TokenComma, hclsyntax.TokenEqual:
			chain[len(chain)-1] = 0
		case hclsyntax.TokenNewline:
			// A newline ends an expression in a body, not inside (…) or […].
			if len(open) == 0 || open[len(open)-1] == hclsyntax.TokenOBrace || open[len(open)-1] == hclsyntax.TokenOHeredoc {
				chain[len(chain)-1] = 0
			}
		case hclsyntax.TokenPlus, hclsyntax.TokenMinus, hclsyntax.TokenStar, hclsyntax.TokenSlash, hclsyntax.TokenPercent,
			hclsyntax.TokenEqualOp, hclsyntax.TokenNotEqual, hclsyntax.TokenLessThan, hclsyntax.TokenLessThanEq,
			hclsyntax.TokenGreaterThan, hclsyntax.TokenGreaterThanEq, hclsyntax.TokenAnd, hclsyntax.TokenOr,
			hclsyntax.TokenBang, hclsyntax.TokenQuestion, hclsyntax.TokenDot:
			chain[len(chain)-1]++
			if chain[len(chain)-1] > MaxChain {
				return complexityDiag(t.Range, fmt.Sprintf("This expression chains more than %d operators or index steps", MaxChain))
			}
		}
	}
	return nil
}

func complexityDiag(r hcl.Range, what string) *hcl.Diagnostic {
	return &hcl.Diagnostic{
		Severity: hcl.DiagError,
		Summary:  "Expression too complex",
		Detail:   what + ": trialform refuses it unparsed, as parsing it could exhaust the stack. Split it into local values.",
		Subject:  r.Ptr(),
	}
}

// parseConfig parses src as hclsyntax.ParseConfig does, but refuses,
// unparsed, a file that nests deeper or chains longer than the bounds
// above. The file returned is never nil.
func parseConfig(src []byte, name string) (*hcl.File, hcl.Diagnostics) {
	if d := tooComplex(src, name); d != nil {
		return &hcl.File{Body: hcl.EmptyBody(), Bytes: src}, hcl.Diagnostics{d}
	}
	return hclsyntax.ParseConfig(src, name, hcl.InitialPos)
}
