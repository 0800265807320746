package jobspec

import (
	"github.com/hashicorp/hcl/v2/hclsyntax"

	"github.com/nomad-edge/nomad/api"
)

// template decodes a task's `template { source data destination env
// change_mode change_signal splay perms left_delimiter right_delimiter
// error_on_missing_key wait { min max } }`. What needs only the text (one
// of source and data, a destination or source leaving the allocation
// directory, the change mode) is checked here, at its position; the
// servers check again for jobs submitted as JSON. change_mode "script"
// with its change_script block, uid and gid are refused by name: the
// client does not implement them.
func (p *parser) template(b *hclsyntax.Block, parent string) *api.Template {
	t := &api.Template{}
	where := blockWhere(b.Type, parent)
	refuse := func(why string) func(*hclsyntax.Attribute) {
		return func(a *hclsyntax.Attribute) {
			p.errorf(a.NameRange, "%s: %s is not supported: %s", where, a.Name, why)
		}
	}
	escapes := func(a *hclsyntax.Attribute, field string, v *string) {
		if v != nil && api.ArtifactDestEscapes(*v) {
			p.errorf(a.Expr.Range(), "invalid %s %q in %s: it escapes the allocation directory (use a path inside the task directory, or ../alloc/)", field, *v, where)
		}
	}
	p.walk(b.Body, where, schema{
		attrs: map[string]func(*hclsyntax.Attribute){
			"source": func(a *hclsyntax.Attribute) {
				t.SourcePath = p.stringPtr(a, where)
				escapes(a, "source", t.SourcePath)
			},
			"destination": func(a *hclsyntax.Attribute) {
				t.DestPath = p.stringPtr(a, where)
				escapes(a, "destination", t.DestPath)
			},
			"data": func(a *hclsyntax.Attribute) { t.EmbeddedTmpl = p.stringPtr(a, where) },
			"change_mode": func(a *hclsyntax.Attribute) {
				t.ChangeMode = p.stringPtr(a, where)
				if m := t.ChangeMode; m != nil {
					switch *m {
					case "noop", "restart", "signal":
					case "script":
						p.errorf(a.Expr.Range(), "%s: change_mode \"script\" is not supported: use restart, signal or noop", where)
					default:
						p.errorf(a.Expr.Range(), "%s: invalid change_mode %q; must be one of noop, restart, signal", where, *m)
					}
				}
			},
			"change_signal":        func(a *hclsyntax.Attribute) { t.ChangeSignal = p.stringPtr(a, where) },
			"splay":                func(a *hclsyntax.Attribute) { t.Splay = p.durationPtr(a, where) },
			"perms":                func(a *hclsyntax.Attribute) { t.Perms = p.stringPtr(a, where) },
			"left_delimiter":       func(a *hclsyntax.Attribute) { t.LeftDelim = p.stringPtr(a, where) },
			"right_delimiter":      func(a *hclsyntax.Attribute) { t.RightDelim = p.stringPtr(a, where) },
			"env":                  func(a *hclsyntax.Attribute) { t.Envvars = p.boolPtr(a, where) },
			"error_on_missing_key": func(a *hclsyntax.Attribute) { t.ErrMissingKey = p.boolPtr(a, where) },
			"uid":                  refuse("rendered files belong to the client's user"),
			"gid":                  refuse("rendered files belong to the client's group"),
		},
		blocks: map[string]blockSpec{
			"wait": {decode: func(b *hclsyntax.Block, _ string) {
				w := &api.WaitConfig{}
				ww := blockWhere(b.Type, where)
				p.walk(b.Body, ww, schema{attrs: map[string]func(*hclsyntax.Attribute){
					"min": func(a *hclsyntax.Attribute) { w.Min = p.durationPtr(a, ww) },
					"max": func(a *hclsyntax.Attribute) { w.Max = p.durationPtr(a, ww) },
				}})
				t.Wait = w
			}},
			"change_script": {decode: func(b *hclsyntax.Block, _ string) {
				p.errorf(b.TypeRange, "%s: change_script is not supported: change_mode \"script\" is not implemented", where)
			}},
		},
	})
	switch {
	case t.SourcePath == nil && t.EmbeddedTmpl == nil:
		p.errorf(b.TypeRange, "%s: one of source or data is required", where)
	case t.SourcePath != nil && t.EmbeddedTmpl != nil:
		p.errorf(b.TypeRange, "%s: only one of source or data may be set", where)
	}
	if t.DestPath == nil {
		p.errorf(b.TypeRange, "missing destination in %s", where)
	}
	if t.ChangeMode != nil && *t.ChangeMode == "signal" && t.ChangeSignal == nil {
		p.errorf(b.TypeRange, "%s: change_mode \"signal\" needs a change_signal", where)
	}
	return t
}
