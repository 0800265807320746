package command

import (
	"fmt"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	hcljson "github.com/hashicorp/hcl/v2/json"
	"github.com/zclconf/go-cty/cty"

	"github.com/nomad-edge/nomad/api"
	"github.com/nomad-edge/nomad/helper/nesting"
)

// namespaceFieldsSchema is what a namespace specification may set.
// Upstream's capabilities, node_pool_config, vault and consul blocks are
// not implemented, so HCL refuses them by name and position.
var namespaceFieldsSchema = []hcl.AttributeSchema{
	{Name: "description"},
	{Name: "quota"},
}

// parseNamespaceSpec reads a namespace specification in either of the
// layouts upstream has used: top-level fields with `name = "x"`, or one
// `namespace "x" { ... }` block. Both carry description, quota and a meta
// block. Problems come back as "file:line:column: message" lines.
func parseNamespaceSpec(src []byte, filename string, isJSON bool) (*api.Namespace, error) {
	file, err := parseSpecFile(src, filename, isJSON)
	if err != nil {
		return nil, err
	}
	top := &hcl.BodySchema{
		Attributes: append([]hcl.AttributeSchema{{Name: "name"}}, namespaceFieldsSchema...),
		Blocks:     []hcl.BlockHeaderSchema{{Type: "meta"}, {Type: "namespace", LabelNames: []string{"name"}}},
	}
	content, diags := file.Body.Content(top)
	if diags.HasErrors() {
		return nil, diagError(diags)
	}
	var blocks []*hcl.Block
	for _, b := range content.Blocks {
		if b.Type == "namespace" {
			blocks = append(blocks, b)
		}
	}
	if len(blocks) == 0 {
		ns := &api.Namespace{}
		if diags := decodeNamespaceFields(content, ns); diags.HasErrors() {
			return nil, diagError(diags)
		}
		if ns.Name == "" {
			return nil, fmt.Errorf("%s: missing namespace name: set name = \"...\" or write a namespace \"<name>\" block", filename)
		}
		return ns, nil
	}
	if len(blocks) > 1 || len(content.Attributes) > 0 || len(content.Blocks) > 1 {
		r := blocks[len(blocks)-1].DefRange
		return nil, fmt.Errorf("%s: a namespace block must be the only thing in the file", hclPos(r))
	}
	inner, diags := blocks[0].Body.Content(&hcl.BodySchema{
		Attributes: namespaceFieldsSchema,
		Blocks:     []hcl.BlockHeaderSchema{{Type: "meta"}},
	})
	if diags.HasErrors() {
		return nil, diagError(diags)
	}
	ns := &api.Namespace{Name: blocks[0].Labels[0]}
	if diags := decodeNamespaceFields(inner, ns); diags.HasErrors() {
		return nil, diagError(diags)
	}
	return ns, nil
}

// decodeNamespaceFields sets ns from the attributes and meta block of c.
func decodeNamespaceFields(c *hcl.BodyContent, ns *api.Namespace) hcl.Diagnostics {
	var diags hcl.Diagnostics
	for name, attr := range c.Attributes {
		s, d := stringAttr(attr)
		diags = append(diags, d...)
		switch name {
		case "name":
			ns.Name = s
		case "description":
			ns.Description = s
		case "quota":
			ns.Quota = s
		}
	}
	for _, b := range c.Blocks {
		if b.Type != "meta" {
			continue
		}
		if ns.Meta != nil {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Duplicate meta block",
				Detail: "Only one meta block is allowed.", Subject: b.DefRange.Ptr()})
			continue
		}
		attrs, d := b.Body.JustAttributes()
		diags = append(diags, d...)
		ns.Meta = map[string]string{}
		for k, attr := range attrs {
			s, d := stringAttr(attr)
			diags = append(diags, d...)
			ns.Meta[k] = s
		}
	}
	return diags
}

// stringAttr evaluates an attribute that must be a literal string.
func stringAttr(attr *hcl.Attribute) (string, hcl.Diagnostics) {
	v, diags := attr.Expr.Value(nil)
	if diags.HasErrors() {
		return "", diags
	}
	if v.IsNull() || !v.Type().Equals(cty.String) {
		return "", hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Invalid value",
			Detail: fmt.Sprintf("%s must be a string.", attr.Name), Subject: attr.Expr.Range().Ptr()}}
	}
	return v.AsString(), nil
}

// pos is where r starts, as file:line:column.
func hclPos(r hcl.Range) string {
	return fmt.Sprintf("%s:%d:%d", r.Filename, r.Start.Line, r.Start.Column)
}

// parseSpecFile parses a specification file given to an apply command,
// HCL or (isJSON) JSON, refusing nesting deep enough to exhaust the parser
// before parsing.
func parseSpecFile(src []byte, filename string, isJSON bool) (*hcl.File, error) {
	var file *hcl.File
	var diags hcl.Diagnostics
	if isJSON {
		if err := nesting.CheckJSON(src, nesting.MaxDepth); err != nil {
			return nil, fmt.Errorf("%s: %w", filename, err)
		}
		file, diags = hcljson.Parse(src, filename)
	} else {
		if d := nesting.CheckHCL(src, filename, nesting.MaxDepth); d != nil {
			return nil, diagError(hcl.Diagnostics{d})
		}
		file, diags = hclsyntax.ParseConfig(src, filename, hcl.InitialPos)
	}
	if diags.HasErrors() {
		return nil, diagError(diags)
	}
	return file, nil
}

// diagError words HCL diagnostics one "file:line:column: summary; detail"
// line each.
func diagError(diags hcl.Diagnostics) error {
	var lines []string
	for _, d := range diags {
		if d.Severity != hcl.DiagError {
			continue
		}
		msg := d.Summary
		if d.Detail != "" {
			msg += "; " + d.Detail
		}
		if d.Subject != nil {
			msg = hclPos(*d.Subject) + ": " + msg
		}
		lines = append(lines, msg)
	}
	return fmt.Errorf("%s", strings.Join(lines, "\n"))
}
