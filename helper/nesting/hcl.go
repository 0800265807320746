package nesting

import (
	"bytes"
	"fmt"

	"github.com/hashicorp/hcl/v2"
)

// CheckHCL returns an error diagnostic, at the character that crossed the
// limit, when the HCL source src nests deeper than max; nil otherwise.
//
// It is a single pass over the bytes that allocates nothing but a stack
// of at most max+1 levels (HCL's own lexer builds hundreds of bytes of
// tokens per input byte, which is itself too much to spend on hostile
// input). It knows HCL's lexical structure: brackets inside quoted
// strings, heredocs and comments are text, while ${ } and %{ } inside
// them nest. Besides brackets it counts what makes HCL's parser recurse
// without any: unary operators (`!!!!x`, `- - -1`) and chained
// conditionals (`a ? b : c ? d : ...`), each one level until the
// expression ends. Malformed input is left for the parser to report.
func CheckHCL(src []byte, filename string, max int) *hcl.Diagnostic {
	s := &hclScan{src: src, max: max, pos: hcl.InitialPos}
	if !s.run() {
		return nil
	}
	end := s.at
	end.Byte++
	end.Column++
	return &hcl.Diagnostic{
		Severity: hcl.DiagError,
		Summary:  fmt.Sprintf("nesting deeper than %d levels", max),
		Detail:   "Blocks, brackets, parentheses, interpolations and operators may nest at most this deep.",
		Subject:  &hcl.Range{Filename: filename, Start: s.at, End: end},
	}
}

// levelKind is what opened a level of nesting.
type levelKind uint8

const (
	levelBrace   levelKind = iota // a block body or an object
	levelBracket                  // a list or an index
	levelParen                    // parentheses or a function call
	levelQuote                    // a quoted template string
	levelHeredoc                  // a heredoc template
	levelInterp                   // ${ ... } or %{ ... } in a template
)

type hclLevel struct {
	kind levelKind
	// ops counts the unary and conditional operators (and, in a
	// template, the open %{ if } and %{ for }) stacked at this level.
	ops    int
	marker []byte // a heredoc's closing word
}

// hclScan is the state of one CheckHCL pass. The level on top of the
// stack says which lexical mode the scanner is in.
type hclScan struct {
	src    []byte
	max    int
	pos    hcl.Pos // of src[pos.Byte]
	at     hcl.Pos // where the token being scanned starts
	levels []hclLevel
	top    int // operators stacked outside any level
	depth  int // len(levels) plus every level's (and top's) operators
	// valueEnded says the last token could end an operand, so that a
	// minus is binary rather than unary.
	valueEnded bool
}

// run scans src and reports whether it nests deeper than max, leaving
// at on the offending token.
func (s *hclScan) run() bool {
	for s.pos.Byte < len(s.src) {
		s.at = s.pos
		var over bool
		switch s.mode() {
		case levelQuote, levelHeredoc:
			over = s.template()
		default:
			over = s.code()
		}
		if over {
			return true
		}
	}
	return false
}

func (s *hclScan) mode() levelKind {
	if n := len(s.levels); n > 0 {
		return s.levels[n-1].kind
	}
	return levelBrace
}

// advance moves pos over n bytes, keeping line and column (in characters).
func (s *hclScan) advance(n int) {
	for range n {
		if s.pos.Byte >= len(s.src) {
			return
		}
		c := s.src[s.pos.Byte]
		s.pos.Byte++
		switch {
		case c == '\n':
			s.pos.Line++
			s.pos.Column = 1
		case c&0xC0 != 0x80: // not a UTF-8 continuation byte
			s.pos.Column++
		}
	}
}

func (s *hclScan) rest() []byte { return s.src[s.pos.Byte:] }

func (s *hclScan) push(l hclLevel) bool {
	s.levels = append(s.levels, l)
	s.depth++
	return s.depth > s.max
}

func (s *hclScan) pop() {
	if n := len(s.levels); n > 0 {
		s.depth -= 1 + s.levels[n-1].ops
		s.levels = s.levels[:n-1]
	}
}

// addOps stacks one operator on the innermost level.
func (s *hclScan) addOp() bool {
	if n := len(s.levels); n > 0 {
		s.levels[n-1].ops++
	} else {
		s.top++
	}
	s.depth++
	return s.depth > s.max
}

// endExpr drops the operators of the expression that just ended.
func (s *hclScan) endExpr() {
	if n := len(s.levels); n > 0 {
		s.depth -= s.levels[n-1].ops
		s.levels[n-1].ops = 0
	} else {
		s.depth -= s.top
		s.top = 0
	}
}

// code scans one token (or comment, or run of blanks) of expression or
// body syntax and reports whether it crossed the limit.
func (s *hclScan) code() bool {
	r := s.rest()
	c := r[0]
	switch {
	case c == '#' || bytes.HasPrefix(r, []byte("//")):
		s.skipLine()
		return false
	case bytes.HasPrefix(r, []byte("/*")):
		end := bytes.Index(r[2:], []byte("*/"))
		if end < 0 {
			end = len(r) - 4
		}
		s.advance(end + 4)
		return false
	case bytes.HasPrefix(r, []byte("<<")):
		return s.heredocStart()
	}
	s.advance(1)
	valueEnded := false
	over := false
	switch c {
	case '{':
		over = s.push(hclLevel{kind: levelBrace})
	case '[':
		over = s.push(hclLevel{kind: levelBracket})
	case '(':
		over = s.push(hclLevel{kind: levelParen})
	case '"':
		over = s.push(hclLevel{kind: levelQuote})
	case '}', ']', ')':
		s.pop()
		valueEnded = true
	case '!', '?':
		over = s.addOp()
	case '-':
		if !s.valueEnded {
			over = s.addOp()
		}
	case ',':
		s.endExpr()
	case '\n':
		// Newlines end an expression only where the parser heeds them
		// (bodies and objects), not inside brackets or interpolations.
		if s.mode() == levelBrace {
			s.endExpr()
		}
	case ' ', '\t', '\r':
		return false // blanks keep valueEnded as it was
	default:
		valueEnded = isWordByte(c)
	}
	s.valueEnded = valueEnded
	return over
}

func isWordByte(c byte) bool {
	return c == '_' || c == '.' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80
}

func (s *hclScan) skipLine() {
	end := bytes.IndexByte(s.rest(), '\n')
	if end < 0 {
		end = len(s.rest())
	}
	s.advance(end) // the newline itself is scanned as code: it may end an expression
}

// heredocStart scans `<<EOT` or `<<-EOT` and its newline; anything else
// after << is left to the parser to refuse.
func (s *hclScan) heredocStart() bool {
	r := s.rest()[2:]
	skip := 2
	if len(r) > 0 && r[0] == '-' {
		r, skip = r[1:], skip+1
	}
	n := 0
	for n < len(r) && isWordByte(r[n]) && r[n] != '.' {
		n++
	}
	marker := r[:n]
	if n == 0 || !bytes.HasPrefix(r[n:], []byte("\n")) && !bytes.HasPrefix(r[n:], []byte("\r\n")) {
		s.advance(skip)
		return false
	}
	s.advance(skip + n)
	s.skipLine()
	s.advance(1)
	return s.push(hclLevel{kind: levelHeredoc, marker: marker})
}

// template scans one piece of a quoted string or heredoc: text, an
// escape, the start of an interpolation or directive, or the end.
func (s *hclScan) template() bool {
	r := s.rest()
	l := &s.levels[len(s.levels)-1]
	if l.kind == levelHeredoc && s.atLineStart() && isHeredocEnd(r, l.marker) {
		s.advance(lineLen(r))
		s.pop()
		s.valueEnded = true
		return false
	}
	switch {
	case bytes.HasPrefix(r, []byte("$${")), bytes.HasPrefix(r, []byte("%%{")):
		s.advance(3)
	case bytes.HasPrefix(r, []byte("${")):
		s.advance(2)
		s.valueEnded = false
		return s.push(hclLevel{kind: levelInterp})
	case bytes.HasPrefix(r, []byte("%{")):
		s.advance(2)
		s.valueEnded = false
		return s.directive()
	case l.kind == levelQuote && r[0] == '\\':
		s.advance(2)
	case l.kind == levelQuote && (r[0] == '"' || r[0] == '\n'):
		// A newline is an unterminated string; the parser says so.
		s.advance(1)
		s.pop()
		s.valueEnded = true
	default:
		s.advance(1)
	}
	return false
}

// directive opens %{ ... } after its %{ has been consumed; if and for
// also open a level in the template around it until endif or endfor.
func (s *hclScan) directive() bool {
	tmpl := len(s.levels) - 1
	word := bytes.TrimLeft(s.rest(), "~ \t")
	switch {
	case hasWord(word, "if"), hasWord(word, "for"):
		s.levels[tmpl].ops++
		s.depth++
	case hasWord(word, "endif"), hasWord(word, "endfor"):
		if s.levels[tmpl].ops > 0 {
			s.levels[tmpl].ops--
			s.depth--
		}
	}
	return s.push(hclLevel{kind: levelInterp})
}

func hasWord(b []byte, w string) bool {
	return bytes.HasPrefix(b, []byte(w)) && (len(b) == len(w) || !isWordByte(b[len(w)]))
}

func (s *hclScan) atLineStart() bool {
	return s.pos.Byte == 0 || s.src[s.pos.Byte-1] == '\n'
}

func lineLen(r []byte) int {
	if n := bytes.IndexByte(r, '\n'); n >= 0 {
		return n
	}
	return len(r)
}

// isHeredocEnd reports whether the line r starts is a heredoc's closing
// marker (indented, for the <<- form; HCL allows indenting either).
func isHeredocEnd(r, marker []byte) bool {
	line := bytes.TrimRight(r[:lineLen(r)], "\r")
	return bytes.Equal(bytes.TrimLeft(line, " \t"), marker)
}
