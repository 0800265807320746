package jobspec

import (
	"cmp"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"

	"github.com/nomad-edge/nomad/api"
	"github.com/nomad-edge/nomad/helper/nesting"
)

// MaxNestingDepth is how deeply a job file may nest (blocks, brackets,
// parentheses, interpolations, operators), counted from the top of the file.
const MaxNestingDepth = nesting.MaxDepth

// ParseFile reads and parses the job file at path. Diagnostics name the
// file by path as given.
func ParseFile(path string) (*api.Job, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading job file: %w", err)
	}
	return Parse(path, src)
}

// Parse parses the HCL2 job file src; filename is used only in
// diagnostics. On failure the error is a *ParseError listing every problem
// found, not just the first.
//
// The result is not canonicalized: unset fields stay nil so that the
// server can tell them from explicit values.
func Parse(filename string, src []byte) (*api.Job, error) {
	// HCL's parser recurses once per level and a hostile file can
	// overflow its stack: refuse deep files before it sees them.
	if d := nesting.CheckHCL(src, filename, MaxNestingDepth); d != nil {
		return nil, newParseError(hcl.Diagnostics{d})
	}
	file, diags := hclsyntax.ParseConfig(src, filename, hcl.InitialPos)
	if diags.HasErrors() {
		// Decoding a body the parser could not make sense of only adds
		// confusing follow-on errors; report the syntax errors alone.
		return nil, newParseError(diags)
	}
	body, ok := file.Body.(*hclsyntax.Body)
	if !ok {
		return nil, fmt.Errorf("%s: not a native HCL syntax body", filename)
	}

	p := &parser{src: src}
	var job *api.Job
	p.walk(body, "the file", schema{
		blocks: map[string]blockSpec{
			"job": {label: "job ID", decode: func(b *hclsyntax.Block, id string) {
				job = p.job(b, id)
			}},
		},
	})
	if job == nil && !p.diags.HasErrors() {
		start := hcl.Range{Filename: filename, Start: hcl.InitialPos, End: hcl.InitialPos}
		p.errorf(start, `no job block found; a job file holds one job "<ID>" { ... } block`)
	}
	if p.diags.HasErrors() {
		return nil, newParseError(p.diags)
	}
	return job, nil
}

// ParseError is every problem found in a job file. Diagnostics keeps
// HCL's structured form (with exact source ranges, for editors and for
// hcl.NewDiagnosticTextWriter); Error renders one "file:line:col: message"
// line per problem, the form compilers use and editors can jump to.
type ParseError struct {
	Diagnostics hcl.Diagnostics
}

func newParseError(diags hcl.Diagnostics) *ParseError {
	errs := make(hcl.Diagnostics, 0, len(diags))
	for _, d := range diags {
		if d.Severity == hcl.DiagError {
			errs = append(errs, d)
		}
	}
	// Source order, whatever order the decoder visited things in.
	slices.SortStableFunc(errs, func(a, b *hcl.Diagnostic) int {
		if a.Subject == nil || b.Subject == nil {
			return 0
		}
		return cmp.Or(
			cmp.Compare(a.Subject.Filename, b.Subject.Filename),
			cmp.Compare(a.Subject.Start.Byte, b.Subject.Start.Byte),
		)
	})
	return &ParseError{Diagnostics: errs}
}

// Error renders one "file:line:col: message" line per problem.
func (e *ParseError) Error() string {
	lines := make([]string, 0, len(e.Diagnostics))
	for _, d := range e.Diagnostics {
		msg := d.Summary
		if d.Detail != "" {
			msg += "; " + d.Detail
		}
		if d.Subject != nil {
			msg = pos(*d.Subject) + ": " + msg
		}
		lines = append(lines, msg)
	}
	return strings.Join(lines, "\n")
}

// pos renders the start of r as file:line:column.
func pos(r hcl.Range) string {
	return fmt.Sprintf("%s:%d:%d", r.Filename, r.Start.Line, r.Start.Column)
}

// parser accumulates diagnostics while decoding one file.
type parser struct {
	src   []byte
	diags hcl.Diagnostics
	// updateBlocks are where the file's update blocks start, refused
	// once the job's type is known (refuseUpdateFor).
	updateBlocks []hcl.Range
}

// errorf records an error at rng. The whole message goes in the summary so
// that it reads well both in ParseError.Error and in HCL's own renderer.
func (p *parser) errorf(rng hcl.Range, format string, args ...any) {
	p.diags = append(p.diags, &hcl.Diagnostic{
		Severity: hcl.DiagError,
		Summary:  fmt.Sprintf(format, args...),
		Subject:  rng.Ptr(),
	})
}

// schema says which attributes and blocks a body accepts. Anything else in
// the body is an error naming it.
type schema struct {
	attrs  map[string]func(*hclsyntax.Attribute)
	blocks map[string]blockSpec
}

// blockSpec describes one kind of nested block.
type blockSpec struct {
	// label names the block's single label (e.g. "group name"); empty for
	// blocks that take none.
	label string
	// multi allows the block to appear more than once.
	multi bool
	// decode handles one occurrence; label is its label, if any.
	decode func(b *hclsyntax.Block, label string)
}

// unsupportedHints explain why some commonly used upstream blocks fail, so
// the error says more than "unsupported".
var unsupportedHints = map[string]string{
	"variable":  "input variables are not supported; write values into the job file",
	"variables": "input variables are not supported; write values into the job file",
	"locals":    "locals are not supported; write values into the job file",
}

// walk decodes body against s, in source order, and records an error for
// every attribute or block s does not accept. where names the body in
// messages, e.g. `group "web"`.
func (p *parser) walk(body *hclsyntax.Body, where string, s schema) {
	// A name accepted both as attribute and as block (meta, env) may still
	// be given only once; seen tracks singletons across both forms.
	seen := map[string]hcl.Range{}

	attrs := make([]*hclsyntax.Attribute, 0, len(body.Attributes))
	for _, a := range body.Attributes {
		attrs = append(attrs, a)
	}
	slices.SortFunc(attrs, func(a, b *hclsyntax.Attribute) int {
		return cmp.Compare(a.NameRange.Start.Byte, b.NameRange.Start.Byte)
	})
	for _, a := range attrs {
		fn, ok := s.attrs[a.Name]
		if !ok {
			if _, isBlock := s.blocks[a.Name]; isBlock {
				p.errorf(a.NameRange, "%q in %s must be a block, not an attribute: %s { ... }", a.Name, where, a.Name)
			} else {
				p.errorf(a.NameRange, "unsupported attribute %q in %s", a.Name, where)
			}
			continue
		}
		if _, isBlock := s.blocks[a.Name]; isBlock {
			seen[a.Name] = a.NameRange
		}
		fn(a)
	}

	for _, b := range body.Blocks {
		spec, ok := s.blocks[b.Type]
		if !ok {
			switch _, isAttr := s.attrs[b.Type]; {
			case isAttr:
				p.errorf(b.TypeRange, "%q in %s must be an attribute, not a block: %s = ...", b.Type, where, b.Type)
			case unsupportedHints[b.Type] != "":
				p.errorf(b.TypeRange, "unsupported block %q in %s: %s", b.Type, where, unsupportedHints[b.Type])
			default:
				p.errorf(b.TypeRange, "unsupported block %q in %s", b.Type, where)
			}
			continue
		}

		label := ""
		switch {
		case spec.label == "" && len(b.Labels) > 0:
			p.errorf(b.LabelRanges[0], "%s block in %s takes no label", b.Type, where)
			continue
		case spec.label != "" && len(b.Labels) != 1:
			rng := b.TypeRange
			if len(b.Labels) > 1 {
				rng = b.LabelRanges[1]
			}
			p.errorf(rng, "%s block in %s needs exactly one label, the %s: %s \"<name>\" { ... }", b.Type, where, spec.label, b.Type)
			continue
		case spec.label != "":
			label = b.Labels[0]
		}

		if !spec.multi {
			if first, dup := seen[b.Type]; dup {
				p.errorf(b.TypeRange, "duplicate %s block in %s; the first is at %s", b.Type, where, pos(first))
				continue
			}
			seen[b.Type] = b.TypeRange
		}
		spec.decode(b, label)
	}
}

// blockWhere names a nested unlabelled block in messages.
func blockWhere(typ, parent string) string {
	return typ + " block of " + parent
}

// stringMapBlock decodes a `meta { k = "v" }` or `env { ... }` block, whose
// attribute names are free.
func (p *parser) stringMapBlock(b *hclsyntax.Block, parent string) map[string]string {
	where := blockWhere(b.Type, parent)
	out := make(map[string]string, len(b.Body.Attributes))
	for name, a := range b.Body.Attributes {
		if s, ok := p.stringVal(a, where); ok {
			out[name] = s
		}
	}
	for _, nb := range b.Body.Blocks {
		p.errorf(nb.TypeRange, "unsupported block %q in %s; it holds only key = value pairs", nb.Type, where)
	}
	return out
}

// freeform decodes a body with no fixed schema (a driver's config) into the
// map the wire carries. Nested blocks become lists of maps, one per
// occurrence, as upstream represents them.
func (p *parser) freeform(body *hclsyntax.Body, where string) map[string]any {
	out := make(map[string]any, len(body.Attributes)+len(body.Blocks))
	for name, a := range body.Attributes {
		if v, ok := p.eval(a.Expr); ok && !v.IsNull() {
			out[name] = toGo(v)
		}
	}
	for _, b := range body.Blocks {
		if len(b.Labels) > 0 {
			p.errorf(b.LabelRanges[0], "%s block in %s takes no label", b.Type, where)
			continue
		}
		if a, isAttr := body.Attributes[b.Type]; isAttr {
			p.errorf(b.TypeRange, "%q in %s is set both as an attribute (at %s) and as a block", b.Type, where, pos(a.NameRange))
			continue
		}
		list, _ := out[b.Type].([]map[string]any)
		out[b.Type] = append(list, p.freeform(b.Body, blockWhere(b.Type, where)))
	}
	return out
}
