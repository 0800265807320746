package jobspec

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/ext/typeexpr"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
)

// sensitiveMark marks values that came from a sensitive variable; cty
// carries it through every operation, so whatever is derived from such a
// variable stays marked and is never printed in a diagnostic.
const sensitiveMark = "sensitive"

// redacted stands in for a sensitive value in messages.
const redacted = "(sensitive value)"

// variable is one `variable "name" { ... }` block.
type variable struct {
	name      string
	declRange hcl.Range
	typ       cty.Type // cty.DynamicPseudoType when the block sets none
	typed     bool
	defaults  *typeexpr.Defaults
	def       *hclsyntax.Attribute // nil: no default, a value is required
	sensitive bool
	rules     []validation
}

// validation is one `validation { condition error_message }` block.
type validation struct {
	condition hclsyntax.Expression
	message   hclsyntax.Expression
	rng       hcl.Range
}

// rawValue is a value for a variable from one source, not yet converted
// to the variable's type.
type rawValue struct {
	expr hcl.Expression
	// from names the source in messages: "-var", "NOMAD_VAR_x", a file.
	from string
	// literal is set for -var and environment values of primitive (or
	// unset) types, which are strings however they read.
	literal *string
}

// variable decodes a `variable "name" { type default description
// validation sensitive }` block into p.vars.
func (p *parser) variable(b *hclsyntax.Block, name string) {
	if !hclsyntax.ValidIdentifier(name) {
		p.errorf(b.LabelRanges[0], "invalid variable name %q: a name starts with a letter and holds letters, digits, underscores and dashes", name)
		return
	}
	if first, dup := p.vars[name]; dup {
		p.errorf(b.LabelRanges[0], "duplicate variable %q; the first is at %s", name, pos(first.declRange))
		return
	}
	v := &variable{name: name, declRange: b.DefRange(), typ: cty.DynamicPseudoType}
	where := fmt.Sprintf("variable %q", name)
	p.walk(b.Body, where, schema{
		attrs: map[string]func(*hclsyntax.Attribute){
			"type": func(a *hclsyntax.Attribute) {
				t, defaults, diags := typeexpr.TypeConstraintWithDefaults(a.Expr)
				if diags.HasErrors() {
					p.diags = append(p.diags, diags...)
					return
				}
				v.typ, v.typed, v.defaults = t, true, defaults
			},
			"default": func(a *hclsyntax.Attribute) { v.def = a },
			"description": func(a *hclsyntax.Attribute) {
				p.constString(a, where)
			},
			"sensitive": func(a *hclsyntax.Attribute) {
				if b := p.constBool(a, where); b != nil {
					v.sensitive = *b
				}
			},
		},
		blocks: map[string]blockSpec{
			"validation": {multi: true, decode: func(vb *hclsyntax.Block, _ string) {
				if r, ok := p.validationBlock(vb, where); ok {
					v.rules = append(v.rules, r)
				}
			}},
		},
		// Declarations are read before any variable has a value.
		noDynamic: true,
	})
	p.vars[name] = v
	p.varOrder = append(p.varOrder, name)
}

// constString and constBool read attributes of declarations, which are
// evaluated before any variable has a value: literals only.
func (p *parser) constString(a *hclsyntax.Attribute, where string) {
	v, diags := a.Expr.Value(nil)
	if diags.HasErrors() {
		p.errorf(a.Expr.Range(), "invalid value for %q in %s: a literal string is required", a.Name, where)
		return
	}
	if _, err := convert.Convert(v, cty.String); err != nil {
		p.typeError(a, where, "a string", v)
	}
}

func (p *parser) constBool(a *hclsyntax.Attribute, where string) *bool {
	v, diags := a.Expr.Value(nil)
	if diags.HasErrors() {
		p.errorf(a.Expr.Range(), "invalid value for %q in %s: a literal bool is required", a.Name, where)
		return nil
	}
	b, err := convert.Convert(v, cty.Bool)
	if err != nil || b.IsNull() {
		p.typeError(a, where, "a bool", v)
		return nil
	}
	return new(b.True())
}

func (p *parser) validationBlock(b *hclsyntax.Block, parent string) (validation, bool) {
	r := validation{rng: b.DefRange()}
	where := blockWhere(b.Type, parent)
	p.walk(b.Body, where, schema{attrs: map[string]func(*hclsyntax.Attribute){
		"condition":     func(a *hclsyntax.Attribute) { r.condition = a.Expr },
		"error_message": func(a *hclsyntax.Attribute) { r.message = a.Expr },
	}, noDynamic: true})
	ok := true
	for _, need := range []struct {
		name string
		expr hclsyntax.Expression
	}{{"condition", r.condition}, {"error_message", r.message}} {
		if need.expr == nil {
			p.errorf(b.TypeRange, "%s needs %q", where, need.name)
			ok = false
		}
	}
	if !ok {
		return r, false
	}
	// A literal message is checked here, as upstream does, so that a bad
	// one is found before any value fails.
	if len(r.message.Variables()) == 0 {
		if m, diags := r.message.Value(nil); !diags.HasErrors() && m.Type() == cty.String && !m.IsNull() {
			if !looksLikeSentence(m.AsString()) {
				p.errorf(r.message.Range(), "invalid error_message in %s: write one or more full sentences, starting with a capital letter and ending with a period or a question mark", where)
				return r, false
			}
		}
	}
	return r, true
}

// looksLikeSentence is upstream's rule for validation messages.
func looksLikeSentence(s string) bool {
	s = strings.TrimSpace(s)
	if s == "" {
		return false
	}
	first, _ := utf8.DecodeRuneInString(s)
	last := s[len(s)-1]
	return !unicode.IsLower(first) && (last == '.' || last == '?')
}

// variablesBlock decodes the short form `variables { name = default }`:
// untyped variables with defaults.
func (p *parser) variablesBlock(b *hclsyntax.Block) {
	attrs := slices.SortedFunc(maps.Values(b.Body.Attributes), func(x, y *hclsyntax.Attribute) int {
		return x.NameRange.Start.Byte - y.NameRange.Start.Byte
	})
	for _, a := range attrs {
		if first, dup := p.vars[a.Name]; dup {
			p.errorf(a.NameRange, "duplicate variable %q; the first is at %s", a.Name, pos(first.declRange))
			continue
		}
		p.vars[a.Name] = &variable{name: a.Name, declRange: a.NameRange, typ: cty.DynamicPseudoType, def: a}
		p.varOrder = append(p.varOrder, a.Name)
	}
	for _, nb := range b.Body.Blocks {
		p.errorf(nb.TypeRange, "unsupported block %q in variables block; it holds only name = default pairs", nb.Type)
	}
}

// resolveVariables gives every declared variable its value, from the
// lowest to the highest precedence source: default, NOMAD_VAR_<name>,
// var files in order, -var flags in order. It reports values for
// undeclared names from var files and flags (not the environment, which
// holds whatever else the shell has), missing values, type mismatches
// and failed validations.
func (p *parser) resolveVariables(sources []map[string]rawValue, undeclared []undeclaredValue) map[string]cty.Value {
	for _, u := range undeclared {
		if _, ok := p.vars[u.name]; !ok {
			p.diags = append(p.diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  fmt.Sprintf("undefined variable %q set by %s; declare it in the job file: variable %q { ... }", u.name, u.from, u.name),
				Subject:  u.rng,
			})
		}
	}
	out := make(map[string]cty.Value, len(p.vars))
	for _, name := range p.varOrder {
		v := p.vars[name]
		var raw *rawValue
		for _, src := range sources {
			if r, ok := src[name]; ok {
				raw = &r
			}
		}
		val, ok := p.variableValue(v, raw)
		if !ok {
			// Reported; references read as unknown and report nothing more.
			out[name] = cty.DynamicVal
			continue
		}
		if v.sensitive {
			val = val.Mark(sensitiveMark)
		}
		if !p.validate(v, val, raw) {
			out[name] = cty.DynamicVal
			continue
		}
		out[name] = val
	}
	return out
}

// undeclaredValue is a value given for a name, checked against the
// declarations once they are all known.
type undeclaredValue struct {
	name string
	from string
	rng  *hcl.Range
}

// variableValue converts the value from the winning source (or the
// default) to the variable's type.
func (p *parser) variableValue(v *variable, raw *rawValue) (cty.Value, bool) {
	var val cty.Value
	var rng hcl.Range
	from := "its default"
	switch {
	case raw != nil && raw.literal != nil:
		val, rng, from = cty.StringVal(*raw.literal), v.declRange, raw.from
		if v.typed && !v.typ.IsPrimitiveType() && v.typ != cty.DynamicPseudoType {
			// A -var or environment value of a collection type is an HCL
			// expression: -var 'dcs=["a","b"]'.
			expr, diags := hclsyntax.ParseExpression([]byte(*raw.literal), raw.from, hcl.InitialPos)
			if diags.HasErrors() {
				p.errorf(v.declRange, "invalid value for variable %q from %s: %s", v.name, raw.from, diags[0].Summary)
				return cty.NilVal, false
			}
			ev, diags := expr.Value(nil)
			if diags.HasErrors() {
				p.errorf(v.declRange, "invalid value for variable %q from %s: only literal values are allowed", v.name, raw.from)
				return cty.NilVal, false
			}
			val = ev
		}
	case raw != nil:
		ev, diags := raw.expr.Value(nil)
		if diags.HasErrors() {
			p.errorf(raw.expr.Range(), "invalid value for variable %q: a var file holds literal values only (no references or function calls)", v.name)
			return cty.NilVal, false
		}
		val, rng, from = ev, raw.expr.Range(), raw.from
	case v.def != nil:
		ev, diags := v.def.Expr.Value(nil)
		if diags.HasErrors() {
			p.errorf(v.def.Expr.Range(), "invalid default for variable %q: a default is a literal value (no references or function calls)", v.name)
			return cty.NilVal, false
		}
		val, rng = ev, v.def.Expr.Range()
	default:
		p.errorf(v.declRange, "variable %q has no value: give it a default, or set it with -var %s=..., a -var-file, or the NOMAD_VAR_%s environment variable", v.name, v.name, v.name)
		return cty.NilVal, false
	}
	if v.defaults != nil {
		val = v.defaults.Apply(val)
	}
	conv, err := convert.Convert(val, v.typ)
	if err != nil {
		p.errorf(rng, "invalid value for variable %q from %s: the type is %s: %s", v.name, from, typeexpr.TypeString(v.typ), err)
		return cty.NilVal, false
	}
	return conv, true
}

// validate runs v's validation rules on val; the condition sees only
// var.<this variable>.
func (p *parser) validate(v *variable, val cty.Value, raw *rawValue) bool {
	ctx := &hcl.EvalContext{
		Variables: map[string]cty.Value{"var": cty.ObjectVal(map[string]cty.Value{v.name: val})},
		Functions: p.ctx.Functions,
	}
	from := "its default"
	subject := v.declRange
	switch {
	case raw != nil && raw.literal == nil:
		from, subject = raw.from, raw.expr.Range()
	case raw != nil:
		from = raw.from
	case v.def != nil:
		subject = v.def.Expr.Range()
	}
	ok := true
	for _, r := range v.rules {
		cond, diags := r.condition.Value(ctx)
		if diags.HasErrors() {
			p.diags = append(p.diags, diags...)
			ok = false
			continue
		}
		cond, _ = cond.Unmark()
		if b, err := convert.Convert(cond, cty.Bool); err != nil || b.IsNull() || !b.IsKnown() {
			p.errorf(r.condition.Range(), "invalid condition in validation of variable %q: a bool is required", v.name)
			ok = false
			continue
		} else if b.True() {
			continue
		}
		msg := "the value is invalid."
		if m, diags := r.message.Value(ctx); diags.HasErrors() {
			p.diags = append(p.diags, diags...)
		} else if m.IsMarked() {
			msg = redacted
		} else if s, err := convert.Convert(m, cty.String); err == nil && !s.IsNull() && s.IsKnown() {
			msg = s.AsString()
		}
		p.errorf(subject, "invalid value for variable %q from %s: %s (the validation rule at %s)", v.name, from, msg, pos(r.rng))
		ok = false
	}
	return ok
}

// local is one attribute of a `locals { }` block.
type local struct {
	attr *hclsyntax.Attribute
}

// localsBlock collects the attributes of a `locals { }` block.
func (p *parser) localsBlock(b *hclsyntax.Block) {
	attrs := slices.SortedFunc(maps.Values(b.Body.Attributes), func(x, y *hclsyntax.Attribute) int {
		return x.NameRange.Start.Byte - y.NameRange.Start.Byte
	})
	for _, a := range attrs {
		if first, dup := p.locals[a.Name]; dup {
			p.errorf(a.NameRange, "duplicate local %q; the first is at %s", a.Name, pos(first.attr.NameRange))
			continue
		}
		p.locals[a.Name] = &local{attr: a}
		p.localOrder = append(p.localOrder, a.Name)
	}
	for _, nb := range b.Body.Blocks {
		p.errorf(nb.TypeRange, "unsupported block %q in locals block; it holds only name = expression pairs", nb.Type)
	}
}

// resolveLocals evaluates the locals in dependency order, so a local may
// use any other one wherever it is written; a cycle is an error naming
// its path.
func (p *parser) resolveLocals() {
	const (
		unvisited = iota
		visiting
		done
	)
	state := map[string]int{}
	vals := map[string]cty.Value{}
	var visit func(name string, path []string)
	visit = func(name string, path []string) {
		l := p.locals[name]
		switch state[name] {
		case done:
			return
		case visiting:
			cycle := append(slices.Clone(path[slices.Index(path, name):]), name)
			p.errorf(l.attr.NameRange, "local %q refers to itself: %s", name, "local."+strings.Join(cycle, " -> local."))
			vals[name] = cty.DynamicVal
			return
		}
		state[name] = visiting
		for _, tr := range l.attr.Expr.Variables() {
			if dep, ok := localRef(tr); ok {
				if _, declared := p.locals[dep]; declared {
					visit(dep, append(path, name))
				}
			}
		}
		state[name] = done
		if _, failed := vals[name]; failed {
			return
		}
		// Locals already resolved are visible to this one.
		p.setScope(nil, vals)
		v, ok := p.evalMarked(l.attr.Expr)
		if !ok {
			v = cty.DynamicVal
		}
		vals[name] = v
	}
	for _, name := range p.localOrder {
		visit(name, nil)
	}
	p.setScope(nil, vals)
}

// localRef returns the local a traversal names, if it is local.<name>.
func localRef(tr hcl.Traversal) (string, bool) {
	if tr.RootName() != "local" || len(tr) < 2 {
		return "", false
	}
	if a, ok := tr[1].(hcl.TraverseAttr); ok {
		return a.Name, true
	}
	return "", false
}

// setScope sets the var and local objects of the root evaluation
// context; a nil map keeps what is there.
func (p *parser) setScope(vars, locals map[string]cty.Value) {
	if vars != nil {
		p.ctx.Variables["var"] = cty.ObjectVal(maps.Clone(vars))
	}
	if locals != nil {
		p.ctx.Variables["local"] = cty.ObjectVal(maps.Clone(locals))
	}
}
