package jobspec

import (
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
)

// eval computes the value of an expression of the job file in the
// current scope (var.*, local.*, a dynamic block's iterator, the
// functions) and returns it unmarked, remembering when it derived from a
// sensitive variable so that messages about it withhold it.
func (p *parser) eval(expr hclsyntax.Expression) (cty.Value, bool) {
	v, ok := p.evalMarked(expr)
	if !ok {
		return cty.DynamicVal, false
	}
	if v.ContainsMarked() {
		p.sensitiveExprs[expr.Range()] = true
		v, _ = v.UnmarkDeep()
	}
	if !v.IsWhollyKnown() {
		// Unknown values come from variables that already failed; only
		// say something if nothing was said.
		if !p.diags.HasErrors() {
			p.errorf(expr.Range(), "this value is not known when the job file is parsed")
		}
		return cty.DynamicVal, false
	}
	return v, true
}

// evalMarked is eval keeping cty marks, for values that flow on (locals,
// for_each).
//
// Strings routinely carry runtime interpolations that the client resolves
// on the node, such as "${attr.kernel.name}" in a constraint or
// "${NOMAD_TASK_DIR}/app.conf" in a driver config. A reference whose root
// is not in scope (anything but var, local and iterators) is therefore
// kept verbatim, "${" source "}", for the client to interpolate later, as
// upstream does; only a bare reference outside a string is refused, since
// it is almost always a missing pair of quotes or a typo.
func (p *parser) evalMarked(expr hclsyntax.Expression) (cty.Value, bool) {
	if !p.checkRefs(expr) {
		return cty.DynamicVal, false
	}
	if !p.hasRuntimeRefs(expr) {
		return p.value2(expr, p.ctx)
	}

	switch e := expr.(type) {
	case *hclsyntax.TemplateExpr:
		var sb strings.Builder
		var marks cty.ValueMarks
		for _, part := range e.Parts {
			s, m, ok := p.templatePart(part)
			if !ok {
				return cty.DynamicVal, false
			}
			sb.WriteString(s)
			if len(m) > 0 {
				marks = m
			}
		}
		return cty.StringVal(sb.String()).WithMarks(marks), true

	case *hclsyntax.TemplateWrapExpr:
		s, m, ok := p.templatePart(e.Wrapped)
		if !ok {
			return cty.DynamicVal, false
		}
		return cty.StringVal(s).WithMarks(m), true

	case *hclsyntax.ParenthesesExpr:
		return p.evalMarked(e.Expression)

	case *hclsyntax.TupleConsExpr:
		vals := make([]cty.Value, 0, len(e.Exprs))
		ok := true
		for _, el := range e.Exprs {
			v, elOK := p.evalMarked(el)
			ok = ok && elOK
			vals = append(vals, v)
		}
		if !ok {
			return cty.DynamicVal, false
		}
		return cty.TupleVal(vals), true

	case *hclsyntax.ObjectConsExpr:
		attrs := make(map[string]cty.Value, len(e.Items))
		ok := true
		for _, item := range e.Items {
			k, keyOK := p.evalMarked(item.KeyExpr)
			v, valOK := p.evalMarked(item.ValueExpr)
			if !keyOK || !valOK {
				ok = false
				continue
			}
			k, _ = k.Unmark()
			ks, err := convert.Convert(k, cty.String)
			if err != nil || ks.IsNull() || !ks.IsKnown() {
				p.errorf(item.KeyExpr.Range(), "object keys must be strings")
				ok = false
				continue
			}
			attrs[ks.AsString()] = v
		}
		if !ok {
			return cty.DynamicVal, false
		}
		return cty.ObjectVal(attrs), true

	case *hclsyntax.ScopeTraversalExpr:
		src := p.source(e.SrcRange)
		p.errorf(e.SrcRange, "unknown reference %s; to leave an interpolation for the client, quote it: \"${%s}\"", src, src)
		return cty.DynamicVal, false

	default:
		ctx, ok := p.runtimeScope(expr)
		if !ok {
			return cty.DynamicVal, false
		}
		return p.value2(expr, ctx)
	}
}

// value2 evaluates expr in ctx, recording HCL's diagnostics (unknown
// functions, wrong argument types...) with their positions.
func (p *parser) value2(expr hclsyntax.Expression, ctx *hcl.EvalContext) (cty.Value, bool) {
	v, diags := expr.Value(ctx)
	p.diags = append(p.diags, diags...)
	return v, !diags.HasErrors()
}

// inScope reports whether name is a variable of the current scope.
func (p *parser) inScope(name string) bool {
	for c := p.ctx; c != nil; c = c.Parent() {
		if _, ok := c.Variables[name]; ok {
			return true
		}
	}
	return false
}

func (p *parser) hasRuntimeRefs(expr hclsyntax.Expression) bool {
	for _, tr := range expr.Variables() {
		if !p.inScope(tr.RootName()) {
			return true
		}
	}
	return false
}

// checkRefs reports references to undeclared variables and locals at
// their positions, in words clearer than HCL's "unsupported attribute".
func (p *parser) checkRefs(expr hclsyntax.Expression) bool {
	ok := true
	for _, tr := range expr.Variables() {
		if len(tr) < 2 || !p.rootIsFile(tr.RootName()) {
			continue
		}
		attr, isAttr := tr[1].(hcl.TraverseAttr)
		if !isAttr {
			continue
		}
		switch tr.RootName() {
		case "var":
			if _, declared := p.vars[attr.Name]; !declared {
				p.errorf(tr.SourceRange(), "undefined variable %q: declare it in the job file: variable %q { ... }", attr.Name, attr.Name)
				ok = false
			}
		case "local":
			if _, declared := p.locals[attr.Name]; !declared {
				p.errorf(tr.SourceRange(), "undefined local %q: no locals block sets it", attr.Name)
				ok = false
			}
		}
	}
	return ok
}

// rootIsFile reports whether name is var or local of the file, not an
// iterator of a dynamic block that happens to be called so.
func (p *parser) rootIsFile(name string) bool {
	if name != "var" && name != "local" {
		return false
	}
	for c := p.ctx; c != nil; c = c.Parent() {
		if _, ok := c.Variables[name]; ok {
			return c.Parent() == nil
		}
	}
	return false
}

// runtimeScope is the current scope plus, for every reference in expr
// whose root is not in scope, a value that renders as the reference's
// own "${...}": functions and conditionals then see the interpolation
// the client will resolve, as upstream's parser does.
func (p *parser) runtimeScope(expr hclsyntax.Expression) (*hcl.EvalContext, bool) {
	roots := map[string]*refNode{}
	ok := true
	for _, tr := range expr.Variables() {
		if p.inScope(tr.RootName()) {
			continue
		}
		text := "${" + p.source(tr.SourceRange()) + "}"
		n := roots[tr.RootName()]
		if n == nil {
			n = &refNode{}
			roots[tr.RootName()] = n
		}
		if !n.insert(tr[1:], text) {
			p.errorf(tr.SourceRange(), "%s cannot be used in this expression together with another reference to a part of it; split the expression", text)
			ok = false
		}
	}
	if !ok {
		return nil, false
	}
	ctx := p.ctx.NewChild()
	ctx.Variables = make(map[string]cty.Value, len(roots))
	for name, n := range roots {
		ctx.Variables[name] = n.value()
	}
	return ctx, true
}

// refNode is one step of the references into a root that is resolved on
// the client: a leaf renders as the reference's text, an inner node is an
// object of its steps.
type refNode struct {
	leaf *string
	kids map[string]*refNode
}

// insert adds the path steps; it fails when a reference would be both a
// leaf and a parent (attr.a and attr.a.b), or a step is not a name.
func (n *refNode) insert(steps hcl.Traversal, text string) bool {
	if len(steps) == 0 {
		if n.kids != nil || (n.leaf != nil && *n.leaf != text) {
			return false
		}
		n.leaf = &text
		return true
	}
	if n.leaf != nil {
		return false
	}
	var name string
	switch s := steps[0].(type) {
	case hcl.TraverseAttr:
		name = s.Name
	case hcl.TraverseIndex:
		if s.Key.Type() != cty.String || s.Key.IsMarked() {
			return false
		}
		name = s.Key.AsString()
	default:
		return false
	}
	if n.kids == nil {
		n.kids = map[string]*refNode{}
	}
	kid := n.kids[name]
	if kid == nil {
		kid = &refNode{}
		n.kids[name] = kid
	}
	return kid.insert(steps[1:], text)
}

func (n *refNode) value() cty.Value {
	if n.leaf != nil {
		return cty.StringVal(*n.leaf)
	}
	attrs := make(map[string]cty.Value, len(n.kids))
	for k, kid := range n.kids {
		attrs[k] = kid.value()
	}
	return cty.ObjectVal(attrs)
}

// templatePart renders one part of a string template: literals as
// themselves, plain references to names not in scope back into "${...}"
// for the client, anything else evaluated. It returns the marks of the
// value.
func (p *parser) templatePart(part hclsyntax.Expression) (string, cty.ValueMarks, bool) {
	if tr, ok := part.(*hclsyntax.ScopeTraversalExpr); ok && !p.inScope(tr.Traversal.RootName()) {
		return "${" + p.source(tr.SrcRange) + "}", nil, true
	}
	v, ok := p.evalMarked(part)
	if !ok {
		return "", nil, false
	}
	v, marks := v.Unmark()
	s, err := convert.Convert(v, cty.String)
	if err != nil || s.IsNull() {
		p.errorf(part.Range(), "this value cannot be interpolated into a string")
		return "", nil, false
	}
	if !s.IsKnown() {
		return "", nil, false
	}
	return s.AsString(), marks, true
}

// source returns the text of the file at r.
func (p *parser) source(r hcl.Range) string {
	if r.Start.Byte < 0 || r.End.Byte > len(p.src) || r.Start.Byte > r.End.Byte {
		return ""
	}
	return string(p.src[r.Start.Byte:r.End.Byte])
}

// numText renders a number for a message. Exact decimal digits of a
// number such as 1e9999999 take minutes to compute, so numbers far from
// any useful range are given by their order of magnitude only.
func numText(bf *big.Float) string {
	if exp := bf.MantExp(nil); exp < -1000 || exp > 1000 {
		sign := ""
		if bf.Sign() < 0 {
			sign = "-"
		}
		return fmt.Sprintf("%sabout 1e%d", sign, int(float64(exp)*math.Log10(2)))
	}
	return bf.Text('g', -1)
}

// shown is text, a rendering of expr's value for a message, or a
// placeholder when the value derives from a sensitive variable.
func (p *parser) shown(expr hclsyntax.Expression, text string) string {
	if p.sensitiveExprs[expr.Range()] {
		return redacted
	}
	return text
}

// The typed accessors below decode one attribute into the Go type its field
// needs. Each returns ok=false after recording a diagnostic that names the
// attribute and where it is; a null value ("x = null") reads as unset.

func (p *parser) value(a *hclsyntax.Attribute) (cty.Value, bool) {
	v, ok := p.eval(a.Expr)
	if !ok || v.IsNull() {
		return cty.NilVal, false
	}
	return v, true
}

func (p *parser) typeError(a *hclsyntax.Attribute, where, want string, got cty.Value) {
	p.errorf(a.Expr.Range(), "invalid value for %q in %s: %s is required, got %s", a.Name, where, want, got.Type().FriendlyName())
}

func (p *parser) stringVal(a *hclsyntax.Attribute, where string) (string, bool) {
	v, ok := p.value(a)
	if !ok {
		return "", false
	}
	s, err := convert.Convert(v, cty.String)
	if err != nil {
		p.typeError(a, where, "a string", v)
		return "", false
	}
	return s.AsString(), true
}

func (p *parser) stringPtr(a *hclsyntax.Attribute, where string) *string {
	s, ok := p.stringVal(a, where)
	if !ok {
		return nil
	}
	return &s
}

func (p *parser) boolPtr(a *hclsyntax.Attribute, where string) *bool {
	v, ok := p.value(a)
	if !ok {
		return nil
	}
	b, err := convert.Convert(v, cty.Bool)
	if err != nil {
		p.typeError(a, where, "a bool", v)
		return nil
	}
	return new(b.True())
}

// intIn decodes a whole number within [lo, hi].
func (p *parser) intIn(a *hclsyntax.Attribute, where string, lo, hi int64) (int64, bool) {
	v, ok := p.value(a)
	if !ok {
		return 0, false
	}
	n, err := convert.Convert(v, cty.Number)
	if err != nil {
		p.typeError(a, where, "a whole number", v)
		return 0, false
	}
	bf := n.AsBigFloat()
	if !bf.IsInt() {
		p.errorf(a.Expr.Range(), "invalid value for %q in %s: a whole number is required, got %s",
			a.Name, where, p.shown(a.Expr, numText(bf)))
		return 0, false
	}
	i, acc := bf.Int64()
	if acc != big.Exact || i < lo || i > hi {
		p.errorf(a.Expr.Range(), "invalid value for %q in %s: must be between %d and %d, got %s",
			a.Name, where, lo, hi, p.shown(a.Expr, numText(bf)))
		return 0, false
	}
	return i, true
}

func (p *parser) intPtr(a *hclsyntax.Attribute, where string) *int {
	i, ok := p.intIn(a, where, math.MinInt, math.MaxInt)
	if !ok {
		return nil
	}
	return new(int(i))
}

func (p *parser) int8Ptr(a *hclsyntax.Attribute, where string) *int8 {
	i, ok := p.intIn(a, where, math.MinInt8, math.MaxInt8)
	if !ok {
		return nil
	}
	return new(int8(i))
}

// durationPtr decodes a Go duration string such as "30s" or "1h30m".
// Numbers are refused rather than guessed at: "30" could mean seconds or
// nanoseconds, and a wrong guess silently changes a disconnect window.
func (p *parser) durationPtr(a *hclsyntax.Attribute, where string) *time.Duration {
	v, ok := p.value(a)
	if !ok {
		return nil
	}
	if v.Type() != cty.String {
		p.errorf(a.Expr.Range(), "invalid duration for %q in %s: a string such as \"30s\" or \"1h\" is required, got %s",
			a.Name, where, v.Type().FriendlyName())
		return nil
	}
	d, err := time.ParseDuration(v.AsString())
	if err != nil {
		p.errorf(a.Expr.Range(), "invalid duration for %q in %s: %s is not a duration such as \"30s\" or \"1h\"",
			a.Name, where, p.shown(a.Expr, strconv.Quote(v.AsString())))
		return nil
	}
	return &d
}

func (p *parser) stringList(a *hclsyntax.Attribute, where string) []string {
	v, ok := p.value(a)
	if !ok {
		return nil
	}
	l, err := convert.Convert(v, cty.List(cty.String))
	if err != nil || !l.IsWhollyKnown() {
		p.typeError(a, where, "a list of strings", v)
		return nil
	}
	out := make([]string, 0, l.LengthInt())
	for _, el := range l.AsValueSlice() {
		if el.IsNull() {
			p.errorf(a.Expr.Range(), "invalid value for %q in %s: list elements must not be null", a.Name, where)
			return nil
		}
		out = append(out, el.AsString())
	}
	return out
}

// stringMapAttr decodes `meta = { k = "v" }`, the form needed for keys that
// are not identifiers ("a.b").
func (p *parser) stringMapAttr(a *hclsyntax.Attribute, where string) map[string]string {
	v, ok := p.value(a)
	if !ok {
		return nil
	}
	m, err := convert.Convert(v, cty.Map(cty.String))
	if err != nil {
		p.typeError(a, where, "a map of strings", v)
		return nil
	}
	out := make(map[string]string, m.LengthInt())
	for k, el := range m.AsValueMap() {
		if el.IsNull() {
			p.errorf(a.Expr.Range(), "invalid value for %q in %s: value of %q must not be null", a.Name, where, k)
			continue
		}
		out[k] = el.AsString()
	}
	return out
}

// toGo turns a value of a free-form block (driver config) into the plain Go
// values the JSON wire carries: whole numbers become int so that integer
// config keys (exit_code = 1) look like integers to the driver.
func toGo(v cty.Value) any {
	if v.IsNull() {
		return nil
	}
	t := v.Type()
	switch {
	case t == cty.String:
		return v.AsString()
	case t == cty.Bool:
		return v.True()
	case t == cty.Number:
		bf := v.AsBigFloat()
		if bf.IsInt() {
			if i, acc := bf.Int64(); acc == big.Exact && i >= math.MinInt && i <= math.MaxInt {
				return int(i)
			}
		}
		f, _ := bf.Float64()
		return f
	case t.IsTupleType() || t.IsListType() || t.IsSetType():
		out := make([]any, 0, v.LengthInt())
		for _, el := range v.AsValueSlice() {
			out = append(out, toGo(el))
		}
		return out
	case t.IsObjectType() || t.IsMapType():
		out := make(map[string]any, v.LengthInt())
		for k, el := range v.AsValueMap() {
			out[k] = toGo(el)
		}
		return out
	default:
		// Unreachable for values built from literals; keep the text rather
		// than panic on a future cty type.
		return fmt.Sprint(v.GoString())
	}
}
