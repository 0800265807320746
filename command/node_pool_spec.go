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
	c, diags := b.Body.Content(&hcl.BodySchema{
		Attributes: []hcl.AttributeSchema{{Name: "lost_after"}, {Name: "replace"}, {Name: "reconcile"}},
		Blocks:     []hcl.BlockHeaderSchema{{Type: "site_outage"}},
	})
	if diags.HasErrors() {
		return diags
	}
	d := &api.NodePoolDisconnect{}
	pool.Disconnect = d
	for _, blk := range c.Blocks {
		if d.SiteOutage != nil {
			return hcl.Diagnostics{duplicateBlock(blk)}
		}
		so, dd := decodeSiteOutage(blk)
		if dd.HasErrors() {
			return dd
		}
		d.SiteOutage = so
	}
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

// decodeSiteOutage reads disconnect { site_outage { threshold window scope
// min_nodes } }. Ranges are checked here, with the attribute's position,
// and again by the servers for API callers.
func decodeSiteOutage(b *hcl.Block) (*api.NodePoolSiteOutage, hcl.Diagnostics) {
	c, diags := b.Body.Content(&hcl.BodySchema{Attributes: []hcl.AttributeSchema{
		{Name: "threshold"}, {Name: "window"}, {Name: "scope"}, {Name: "min_nodes"},
	}})
	if diags.HasErrors() {
		return nil, diags
	}
	so := &api.NodePoolSiteOutage{}
	bad := func(a *hcl.Attribute, format string, args ...any) hcl.Diagnostics {
		return hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Invalid value",
			Detail: fmt.Sprintf(format, args...), Subject: a.Expr.Range().Ptr()}}
	}
	if a, ok := c.Attributes["threshold"]; ok {
		v, dd := a.Expr.Value(nil)
		if dd.HasErrors() {
			return nil, dd
		}
		if v.IsNull() || !v.Type().Equals(cty.Number) {
			return nil, bad(a, "site_outage.threshold must be a number greater than 0 and at most 1, such as 0.5.")
		}
		f, _ := v.AsBigFloat().Float64()
		if f <= 0 || f > 1 {
			return nil, bad(a, "site_outage.threshold %g must be greater than 0 and at most 1.", f)
		}
		so.Threshold = f
	}
	if a, ok := c.Attributes["window"]; ok {
		s, dd := stringAttr(a)
		if dd.HasErrors() {
			return nil, dd
		}
		v, err := time.ParseDuration(s)
		if err != nil {
			return nil, bad(a, "site_outage.window: %v.", err)
		}
		if v <= 0 {
			return nil, bad(a, "site_outage.window %q must be positive.", s)
		}
		so.Window = v
	}
	if a, ok := c.Attributes["scope"]; ok {
		s, dd := stringAttr(a)
		if dd.HasErrors() {
			return nil, dd
		}
		if s != "datacenter" && s != "pool" {
			return nil, bad(a, "site_outage.scope %q is not one of \"datacenter\" or \"pool\".", s)
		}
		so.Scope = s
	}
	if a, ok := c.Attributes["min_nodes"]; ok {
		v, dd := a.Expr.Value(nil)
		if dd.HasErrors() {
			return nil, dd
		}
		if v.IsNull() || !v.Type().Equals(cty.Number) || !v.AsBigFloat().IsInt() {
			return nil, bad(a, "site_outage.min_nodes must be a whole number of at least 1.")
		}
		n, _ := v.AsBigFloat().Int64()
		if n < 1 {
			return nil, bad(a, "site_outage.min_nodes %d must be at least 1.", n)
		}
		so.MinNodes = int(n)
	}
	return so, nil
}
