package jobspec

import (
	"fmt"
	"math"
	"math/big"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
)

// eval computes the value of an expression of the job file.
//
// Job files are static: there are no variables or functions. But strings
// routinely carry runtime interpolations that the client resolves on the
// node, such as "${attr.kernel.name}" in a constraint or
// "${NOMAD_TASK_DIR}/app.conf" in a driver config. HCL would reject those as
// references to undefined variables, so a template's plain references are
// kept verbatim, "${" source "}", for the client to interpolate later.
// Anything else that needs an evaluation context (function calls,
// conditionals on references, for expressions) is an error.
func (p *parser) eval(expr hclsyntax.Expression) (cty.Value, bool) {
	if len(expr.Variables()) == 0 {
		v, diags := expr.Value(nil)
		p.diags = append(p.diags, diags...)
		return v, !diags.HasErrors()
	}

	switch e := expr.(type) {
	case *hclsyntax.TemplateExpr:
		var sb strings.Builder
		for _, part := range e.Parts {
			s, ok := p.templatePart(part)
			if !ok {
				return cty.DynamicVal, false
			}
			sb.WriteString(s)
		}
		return cty.StringVal(sb.String()), true

	case *hclsyntax.TemplateWrapExpr:
		s, ok := p.templatePart(e.Wrapped)
		if !ok {
			return cty.DynamicVal, false
		}
		return cty.StringVal(s), true

	case *hclsyntax.ParenthesesExpr:
		return p.eval(e.Expression)

	case *hclsyntax.TupleConsExpr:
		vals := make([]cty.Value, 0, len(e.Exprs))
		ok := true
		for _, el := range e.Exprs {
			v, elOK := p.eval(el)
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
			k, keyOK := p.eval(item.KeyExpr)
			v, valOK := p.eval(item.ValueExpr)
			if !keyOK || !valOK {
				ok = false
				continue
			}
			ks, err := convert.Convert(k, cty.String)
			if err != nil || ks.IsNull() {
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
		p.errorf(e.SrcRange, "variables are not supported; to leave an interpolation for the client, quote it: \"${%s}\"", src)
		return cty.DynamicVal, false

	default:
		p.errorf(expr.Range(), "this expression refers to variables, which are not supported in job files")
		return cty.DynamicVal, false
	}
}

// templatePart renders one part of a string template: literals as
// themselves, plain references back into "${...}" for the client.
func (p *parser) templatePart(part hclsyntax.Expression) (string, bool) {
	if tr, ok := part.(*hclsyntax.ScopeTraversalExpr); ok {
		return "${" + p.source(tr.SrcRange) + "}", true
	}
	if len(part.Variables()) > 0 {
		p.errorf(part.Range(), "only plain references such as ${attr.kernel.name} or ${NOMAD_TASK_DIR} may be interpolated; expressions on them are not supported")
		return "", false
	}
	v, ok := p.eval(part)
	if !ok {
		return "", false
	}
	s, err := convert.Convert(v, cty.String)
	if err != nil || s.IsNull() {
		p.errorf(part.Range(), "this value cannot be interpolated into a string")
		return "", false
	}
	return s.AsString(), true
}

// source returns the text of the file at r.
func (p *parser) source(r hcl.Range) string {
	if r.Start.Byte < 0 || r.End.Byte > len(p.src) || r.Start.Byte > r.End.Byte {
		return ""
	}
	return string(p.src[r.Start.Byte:r.End.Byte])
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
			a.Name, where, bf.Text('g', -1))
		return 0, false
	}
	i, acc := bf.Int64()
	if acc != big.Exact || i < lo || i > hi {
		p.errorf(a.Expr.Range(), "invalid value for %q in %s: must be between %d and %d, got %s",
			a.Name, where, lo, hi, bf.Text('g', -1))
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
		p.errorf(a.Expr.Range(), "invalid duration for %q in %s: %q is not a duration such as \"30s\" or \"1h\"",
			a.Name, where, v.AsString())
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
