package jobspec

import (
	"strings"

	"github.com/hashicorp/hcl/v2/hclsyntax"

	"github.com/nomad-edge/nomad/api"
)

// artifact decodes a task's `artifact { source destination mode options {}
// headers {} }`. The two checks that need only the text (mode, a
// destination that leaves the allocation directory) are made here too, so
// that the error points at the line; the server makes them again for jobs
// submitted as JSON.
func (p *parser) artifact(b *hclsyntax.Block, parent string) *api.TaskArtifact {
	a := &api.TaskArtifact{}
	where := blockWhere(b.Type, parent)
	p.walk(b.Body, where, schema{
		attrs: map[string]func(*hclsyntax.Attribute){
			"source": func(at *hclsyntax.Attribute) { a.GetterSource = p.stringPtr(at, where) },
			"destination": func(at *hclsyntax.Attribute) {
				a.RelativeDest = p.stringPtr(at, where)
				if a.RelativeDest != nil && api.ArtifactDestEscapes(*a.RelativeDest) {
					p.errorf(at.Expr.Range(), "invalid destination %q in %s: it escapes the allocation directory (use a path inside the task directory, or ../alloc/)", *a.RelativeDest, where)
				}
			},
			"mode": func(at *hclsyntax.Attribute) {
				a.GetterMode = p.stringPtr(at, where)
				if m := a.GetterMode; m != nil && !strings.Contains(*m, "${") {
					switch *m {
					case "any", "file", "dir":
					default:
						p.errorf(at.Expr.Range(), "invalid mode %q in %s: must be one of any, file, dir", *m, where)
					}
				}
			},
		},
		blocks: map[string]blockSpec{
			"options": {decode: func(b *hclsyntax.Block, _ string) { a.GetterOptions = p.stringMapBlock(b, where) }},
			"headers": {decode: func(b *hclsyntax.Block, _ string) { a.GetterHeaders = p.stringMapBlock(b, where) }},
		},
	})
	if a.GetterSource == nil {
		p.errorf(b.TypeRange, "missing source in %s", where)
	}
	return a
}
