package command

import (
	"fmt"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/nomad-edge/nomad/api"
)

// parseNodePoolSpec reads a node pool specification: one
// `node_pool "name" { description meta {...} disconnect {...} }` block.
// The disconnect block is ours; upstream's scheduler_config block is not
// implemented and HCL refuses it by name and position. Problems come back
// as "file:line:column: message" lines.
func parseNodePoolSpec(src []byte, filename string, isJSON bool) (*api.NodePool, error) {
	file, err := parseSpecFile(src, filename, isJSON)
	if err != nil {
		return nil, err
	}
	content, diags := file.Body.Content(&hcl.BodySchema{
		Blocks: []hcl.BlockHeaderSchema{{Type: "node_pool", LabelNames: []string{"name"}}},
	})
	if diags.HasErrors() {
		return nil, diagError(diags)
	}
	if len(content.Blocks) != 1 {
		return nil, fmt.Errorf("%s: a node pool specification holds exactly one node_pool \"<name>\" block; found %d", filename, len(content.Blocks))
	}
	b := content.Blocks[0]
	inner, diags := b.Body.Content(&hcl.BodySchema{
		Attributes: []hcl.AttributeSchema{{Name: "description"}},
		Blocks:     []hcl.BlockHeaderSchema{{Type: "meta"}, {Type: "disconnect"}},
	})
	if diags.HasErrors() {
		return nil, diagError(diags)
	}
	pool := &api.NodePool{Name: b.Labels[0]}
	if a, ok := inner.Attributes["description"]; ok {
		pool.Description, diags = stringAttr(a)
		if diags.HasErrors() {
			return nil, diagError(diags)
		}
	}
	for _, blk := range inner.Blocks {
		switch blk.Type {
		case "meta":
			diags = append(diags, decodeMeta(blk, pool)...)
		case "disconnect":
			diags = append(diags, decodePoolDisconnect(blk, pool)...)
		}
	}
	if diags.HasErrors() {
		return nil, diagError(diags)
	}
	return pool, nil
}

func duplicateBlock(b *hcl.Block) *hcl.Diagnostic {
	return &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Duplicate " + b.Type + " block",
		Detail: "Only one " + b.Type + " block is allowed.", Subject: b.DefRange.Ptr()}
}

func decodeMeta(b *hcl.Block, pool *api.NodePool) hcl.Diagnostics {
	if pool.Meta != nil {
		return hcl.Diagnostics{duplicateBlock(b)}
	}
	attrs, diags := b.Body.JustAttributes()
	pool.Meta = map[string]string{}
	for k, attr := range attrs {
		s, d := stringAttr(attr)
		diags = append(diags, d...)
		pool.Meta[k] = s
	}
	return diags
}

func decodePoolDisconnect(b *hcl.Block, pool *api.NodePool) hcl.Diagnostics {
	if pool.Disconnect != nil {
		return hcl.Diagnostics{duplicateBlock(b)}
	}
	c, diags := b.Body.Content(&hcl.BodySchema{Attributes: []hcl.AttributeSchema{
		{Name: "lost_after"}, {Name: "replace"}, {Name: "reconcile"},
	}})
	if diags.HasErrors() {
		return diags
	}
	d := &api.NodePoolDisconnect{}
	pool.Disconnect = d
	if a, ok := c.Attributes["lost_after"]; ok {
		s, dd := stringAttr(a)
		if dd.HasErrors() {
			return dd
		}
		v, err := time.ParseDuration(s)
		if err != nil {
			return hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Invalid duration",
				Detail: fmt.Sprintf("lost_after: %v.", err), Subject: a.Expr.Range().Ptr()}}
		}
		d.LostAfter = v
	}
	if a, ok := c.Attributes["replace"]; ok {
		v, dd := a.Expr.Value(nil)
		if dd.HasErrors() {
			return dd
		}
		if v.IsNull() || !v.Type().Equals(cty.Bool) {
			return hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Invalid value",
				Detail: "replace must be true or false.", Subject: a.Expr.Range().Ptr()}}
		}
		r := v.True()
		d.Replace = &r
	}
	if a, ok := c.Attributes["reconcile"]; ok {
		s, dd := stringAttr(a)
		if dd.HasErrors() {
			return dd
		}
		d.Reconcile = s
	}
	return nil
}
