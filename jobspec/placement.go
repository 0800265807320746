package jobspec

import (
	"cmp"
	"slices"

	"github.com/hashicorp/hcl/v2/hclsyntax"

	"github.com/nomad-edge/nomad/api"
)

// operatorShorthands are attributes that name the operator and give the
// value in one go: `version = ">= 1.2"` means operator "version", value
// ">= 1.2".
var operatorShorthands = []string{
	api.ConstraintVersion,
	api.ConstraintSemver,
	api.ConstraintRegex,
	api.ConstraintSetContains,
	api.ConstraintSetContainsAny,
	api.ConstraintSetContainsAll,
}

// placementRule is what constraint and affinity blocks have in common.
type placementRule struct {
	LTarget, Operand, RTarget string
	// drop is set by `distinct_hosts = false`, which asks for no
	// constraint at all.
	drop bool
	ok   bool
}

// placementSpec says what a constraint-like block accepts beyond the
// attribute/operator/value triple and the operator shorthands.
type placementSpec struct {
	// distinct accepts distinct_hosts and distinct_property, which only
	// constraints have.
	distinct bool
	// extra are further attributes (affinity's weight), each decoded by
	// its function.
	extra map[string]func(*hclsyntax.Attribute)
}

// placement decodes the attribute/operator/value triple of a constraint or
// affinity block, with the shorthands.
func (p *parser) placement(b *hclsyntax.Block, where string, spec placementSpec) placementRule {
	got := map[string]*hclsyntax.Attribute{}
	collect := func(a *hclsyntax.Attribute) { got[a.Name] = a }

	attrs := map[string]func(*hclsyntax.Attribute){
		"attribute": collect,
		"operator":  collect,
		"value":     collect,
	}
	for _, s := range operatorShorthands {
		attrs[s] = collect
	}
	if spec.distinct {
		attrs[api.ConstraintDistinctHosts] = collect
		attrs[api.ConstraintDistinctProperty] = collect
	}
	for name, fn := range spec.extra {
		attrs[name] = fn
	}
	before := len(p.diags)
	p.walk(b.Body, where, schema{attrs: attrs})

	var r placementRule
	str := func(name string) string {
		if a := got[name]; a != nil {
			s, _ := p.stringVal(a, where)
			return s
		}
		return ""
	}
	r.LTarget, r.Operand, r.RTarget = str("attribute"), str("operator"), str("value")

	// At most one attribute may choose the operator (the first in the file
	// wins; later ones are errors), and it must not fight an explicit
	// attribute for the slot it fills.
	var choosers []*hclsyntax.Attribute
	for _, name := range slices.Concat(operatorShorthands, []string{api.ConstraintDistinctHosts, api.ConstraintDistinctProperty}) {
		if a := got[name]; a != nil {
			choosers = append(choosers, a)
		}
	}
	slices.SortFunc(choosers, func(a, b *hclsyntax.Attribute) int {
		return cmp.Compare(a.NameRange.Start.Byte, b.NameRange.Start.Byte)
	})
	for _, a := range choosers[min(1, len(choosers)):] {
		p.errorf(a.NameRange, "%q and %q cannot both be set in %s; each chooses the operator", choosers[0].Name, a.Name, where)
	}
	conflict := func(a *hclsyntax.Attribute, slots ...string) bool {
		for _, s := range slots {
			if got[s] != nil {
				p.errorf(a.NameRange, "%q and %q cannot both be set in %s", s, a.Name, where)
				return true
			}
		}
		return false
	}
	if len(choosers) > 0 {
		switch a := choosers[0]; a.Name {
		case api.ConstraintDistinctHosts:
			if !conflict(a, "operator") {
				if v := p.boolPtr(a, where); v != nil {
					if *v {
						r.Operand = api.ConstraintDistinctHosts
					} else {
						r.drop = true
					}
				}
			}
		case api.ConstraintDistinctProperty:
			if !conflict(a, "operator", "attribute") {
				r.Operand, r.LTarget = api.ConstraintDistinctProperty, str(a.Name)
			}
		default:
			if !conflict(a, "operator", "value") {
				r.Operand, r.RTarget = a.Name, str(a.Name)
			}
		}
	}
	if r.Operand == "" {
		r.Operand = "="
	}
	r.ok = len(p.diags) == before
	return r
}

// constraint decodes a constraint block; nil means "no constraint" (after
// an error, or for `distinct_hosts = false`).
func (p *parser) constraint(b *hclsyntax.Block, parent string) *api.Constraint {
	r := p.placement(b, blockWhere(b.Type, parent), placementSpec{distinct: true})
	if !r.ok || r.drop {
		return nil
	}
	return &api.Constraint{LTarget: r.LTarget, Operand: r.Operand, RTarget: r.RTarget}
}

// affinity decodes an affinity block. The weight stays nil when unset so
// that canonicalization, not the parser, owns the default.
func (p *parser) affinity(b *hclsyntax.Block, parent string) *api.Affinity {
	where := blockWhere(b.Type, parent)
	var weight *int8
	r := p.placement(b, where, placementSpec{extra: map[string]func(*hclsyntax.Attribute){
		"weight": func(a *hclsyntax.Attribute) { weight = p.int8Ptr(a, where) },
	}})
	if !r.ok {
		return nil
	}
	return &api.Affinity{LTarget: r.LTarget, Operand: r.Operand, RTarget: r.RTarget, Weight: weight}
}

// spread decodes `spread { attribute weight target "value" { percent } }`.
// Whether the percentages add up is validation, done by the server.
func (p *parser) spread(b *hclsyntax.Block, parent string) *api.Spread {
	where := blockWhere(b.Type, parent)
	s := &api.Spread{}
	p.walk(b.Body, where, schema{
		attrs: map[string]func(*hclsyntax.Attribute){
			"attribute": func(a *hclsyntax.Attribute) {
				if v, ok := p.stringVal(a, where); ok {
					s.Attribute = v
				}
			},
			"weight": func(a *hclsyntax.Attribute) { s.Weight = p.int8Ptr(a, where) },
		},
		blocks: map[string]blockSpec{
			"target": {label: "target value", multi: true, decode: func(tb *hclsyntax.Block, value string) {
				t := &api.SpreadTarget{Value: value}
				tWhere := blockWhere(tb.Type, where)
				p.walk(tb.Body, tWhere, schema{attrs: map[string]func(*hclsyntax.Attribute){
					"percent": func(a *hclsyntax.Attribute) {
						if v, ok := p.intIn(a, tWhere, 0, 100); ok {
							t.Percent = uint8(v)
						}
					},
				}})
				s.SpreadTarget = append(s.SpreadTarget, t)
			}},
		},
	})
	return s
}
