package jobspec

import (
	"fmt"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
)

// MaxDynamicBlocks is how many blocks the dynamic blocks of one job file
// may generate in all: a for_each over range(1e9), or nested ones
// multiplying, must not exhaust the memory of the agent that parses it.
const MaxDynamicBlocks = 10000

// dynamic expands `dynamic "<type>" { for_each iterator labels content {
// ... } }` into one <type> block per element of for_each and hands each to
// emit, which decodes it against the enclosing schema as if it had been
// written out. While emit runs, the iterator (named after the block type
// unless `iterator` says otherwise) is in scope as <iterator>.key and
// <iterator>.value, for the labels and the content, and for dynamic
// blocks nested in the content.
func (p *parser) dynamic(b *hclsyntax.Block, parent string, emit func(gen *hclsyntax.Block) bool) {
	if len(b.Labels) != 1 {
		rng := b.TypeRange
		if len(b.Labels) > 1 {
			rng = b.LabelRanges[1]
		}
		p.errorf(rng, "dynamic block in %s needs exactly one label, the type of the blocks to generate: dynamic \"<type>\" { ... }", parent)
		return
	}
	typ := b.Labels[0]
	where := fmt.Sprintf("dynamic %q block of %s", typ, parent)

	var forEach, labels *hclsyntax.Attribute
	var content *hclsyntax.Block
	iterator := typ
	p.walk(b.Body, where, schema{
		attrs: map[string]func(*hclsyntax.Attribute){
			"for_each": func(a *hclsyntax.Attribute) { forEach = a },
			"labels":   func(a *hclsyntax.Attribute) { labels = a },
			"iterator": func(a *hclsyntax.Attribute) {
				tr, diags := hcl.AbsTraversalForExpr(a.Expr)
				if diags.HasErrors() || len(tr) != 1 {
					p.errorf(a.Expr.Range(), "invalid iterator in %s: a bare name is required, such as iterator = item", where)
					return
				}
				iterator = tr.RootName()
			}},
		blocks: map[string]blockSpec{
			"content": {decode: func(cb *hclsyntax.Block, _ string) { content = cb }},
		},
		noDynamic: true,
	})
	if forEach == nil {
		p.errorf(b.TypeRange, "%s needs for_each, the collection to generate blocks from", where)
	}
	if content == nil {
		p.errorf(b.TypeRange, "%s needs a content block, the body of each generated block", where)
	}
	if forEach == nil || content == nil {
		return
	}

	coll, ok := p.evalMarked(forEach.Expr)
	if !ok {
		return
	}
	coll, marks := coll.UnmarkDeep()
	if !coll.IsWhollyKnown() {
		return // a variable it uses already failed
	}
	if coll.IsNull() || !coll.CanIterateElements() {
		p.errorf(forEach.Expr.Range(), "invalid for_each in %s: a list, set, map or object is required, got %s", where, friendly(coll))
		return
	}

	outer := p.ctx
	defer func() { p.ctx = outer }()
	for it := coll.ElementIterator(); it.Next(); {
		if p.generated++; p.generated > MaxDynamicBlocks {
			if p.generated == MaxDynamicBlocks+1 { // said once, where it happened
				p.errorf(forEach.Expr.Range(), "dynamic blocks in this file generate more than %d blocks", MaxDynamicBlocks)
			}
			return
		}
		k, v := it.Element()
		p.ctx = outer.NewChild()
		p.ctx.Variables = map[string]cty.Value{iterator: cty.ObjectVal(map[string]cty.Value{
			"key": k.WithMarks(marks), "value": v.WithMarks(marks),
		})}
		gen := &hclsyntax.Block{
			Type:            typ,
			Body:            content.Body,
			TypeRange:       b.LabelRanges[0],
			LabelRanges:     nil,
			OpenBraceRange:  content.OpenBraceRange,
			CloseBraceRange: content.CloseBraceRange,
		}
		if labels != nil {
			ls, rngs, ok := p.dynamicLabels(labels, where)
			if !ok {
				return
			}
			gen.Labels, gen.LabelRanges = ls, rngs
		}
		if !emit(gen) {
			return // one error per dynamic block, not one per element
		}
	}
}

// dynamicLabels evaluates a dynamic block's labels for the current
// element; each label is reported at its own expression when the list is
// written out.
func (p *parser) dynamicLabels(a *hclsyntax.Attribute, where string) ([]string, []hcl.Range, bool) {
	v, ok := p.eval(a.Expr)
	if !ok {
		return nil, nil, false
	}
	l, err := convert.Convert(v, cty.List(cty.String))
	if err != nil || l.IsNull() {
		p.errorf(a.Expr.Range(), "invalid labels in %s: a list of strings is required, got %s", where, friendly(v))
		return nil, nil, false
	}
	var elRanges []hcl.Range
	if tup, ok := a.Expr.(*hclsyntax.TupleConsExpr); ok {
		for _, e := range tup.Exprs {
			elRanges = append(elRanges, e.Range())
		}
	}
	out := make([]string, 0, l.LengthInt())
	rngs := make([]hcl.Range, 0, l.LengthInt())
	for i, el := range l.AsValueSlice() {
		if el.IsNull() {
			p.errorf(a.Expr.Range(), "invalid labels in %s: a label must not be null", where)
			return nil, nil, false
		}
		out = append(out, el.AsString())
		if i < len(elRanges) {
			rngs = append(rngs, elRanges[i])
		} else {
			rngs = append(rngs, a.Expr.Range())
		}
	}
	return out, rngs, true
}

// friendly names a value's type in messages, null included.
func friendly(v cty.Value) string {
	if v.IsNull() {
		return "null"
	}
	return v.Type().FriendlyName()
}
