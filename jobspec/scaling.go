package jobspec

import (
	"math"

	"github.com/hashicorp/hcl/v2/hclsyntax"

	"github.com/nomad-edge/nomad/api"
)

// scaling decodes a group's `scaling { enabled min max policy { ... } }`.
// The policy body belongs to the autoscaler: it is kept whole, in the
// shape upstream's API returns (see scalingPolicyBody). Whether min, max
// and count fit together is validation, done by the server.
func (p *parser) scaling(b *hclsyntax.Block, parent string) *api.ScalingPolicy {
	s := &api.ScalingPolicy{}
	where := blockWhere(b.Type, parent)
	p.walk(b.Body, where, schema{
		attrs: map[string]func(*hclsyntax.Attribute){
			"enabled": func(a *hclsyntax.Attribute) { s.Enabled = p.boolPtr(a, where) },
			"min":     func(a *hclsyntax.Attribute) { s.Min = p.int64Ptr(a, where) },
			"max":     func(a *hclsyntax.Attribute) { s.Max = p.int64Ptr(a, where) },
		},
		blocks: map[string]blockSpec{
			"policy": {decode: func(b *hclsyntax.Block, _ string) {
				s.Policy = p.scalingPolicyBody(b.Body, blockWhere("policy", where))
			}},
		},
	})
	return s
}

// withoutTaskScaling refuses each task-level scaling block of body by
// name, however it is labelled, and returns the body without them for the
// task's walk: upstream's Enterprise edition uses them to size a task's
// cpu and memory, which nothing here does.
func (p *parser) withoutTaskScaling(body *hclsyntax.Body, where string) *hclsyntax.Body {
	keep := make(hclsyntax.Blocks, 0, len(body.Blocks))
	for _, b := range body.Blocks {
		if b.Type != "scaling" {
			keep = append(keep, b)
			continue
		}
		p.errorf(b.TypeRange, "unsupported block %q in %s: task-level scaling (dynamic application sizing) is not supported; a group's scaling block scales its count", b.Type, where)
	}
	if len(keep) == len(body.Blocks) {
		return body
	}
	c := *body
	c.Blocks = keep
	return &c
}

// scalingPolicyBody decodes an opaque policy body the way upstream's API
// shows it to the autoscaler: attributes as values, every block as a list
// entry under its type, a labelled block as a one-key map from its label
// to a list holding its body (`check "cpu" { ... }` becomes
// "check": [{"cpu": [{...}]}]).
func (p *parser) scalingPolicyBody(body *hclsyntax.Body, where string) map[string]any {
	out := make(map[string]any, len(body.Attributes)+len(body.Blocks))
	for name, a := range body.Attributes {
		if v, ok := p.eval(a.Expr); ok && !v.IsNull() {
			out[name] = toGo(v)
		}
	}
	for _, b := range body.Blocks {
		if a, isAttr := body.Attributes[b.Type]; isAttr {
			p.errorf(b.TypeRange, "%q in %s is set both as an attribute (at %s) and as a block", b.Type, where, pos(a.NameRange))
			continue
		}
		var v any = p.scalingPolicyBody(b.Body, blockWhere(b.Type, where))
		for i := len(b.Labels) - 1; i >= 0; i-- {
			v = map[string]any{b.Labels[i]: []any{v}}
		}
		list, _ := out[b.Type].([]any)
		out[b.Type] = append(list, v)
	}
	return out
}

func (p *parser) int64Ptr(a *hclsyntax.Attribute, where string) *int64 {
	i, ok := p.intIn(a, where, math.MinInt64, math.MaxInt64)
	if !ok {
		return nil
	}
	return new(i)
}
