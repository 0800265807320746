package jobspec

import (
	"github.com/hashicorp/hcl/v2/hclsyntax"

	"github.com/nomad-edge/nomad/api"
)

// template decodes a task's `template { source data destination env
// change_mode change_signal splay perms uid gid left_delimiter
// right_delimiter error_on_missing_key wait { min max } change_script {
// command args timeout fail_on_error } }`. What needs only the text (one
// of source and data, a destination or source leaving the allocation
// directory, the change mode with its signal or script) is checked here,
// at its position; the servers check again for jobs submitted as JSON.
func (p *parser) template(b *hclsyntax.Block, parent string) *api.Template {
	t := &api.Template{}
	where := blockWhere(b.Type, parent)
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
					case "noop", "restart", "signal", "script":
					default:
						p.errorf(a.Expr.Range(), "%s: invalid change_mode %q; must be one of noop, restart, signal, script", where, *m)
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
			"uid":                  func(a *hclsyntax.Attribute) { t.Uid = p.intPtr(a, where) },
			"gid":                  func(a *hclsyntax.Attribute) { t.Gid = p.intPtr(a, where) },
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
				cs := &api.ChangeScript{}
				cw := blockWhere(b.Type, where)
				p.walk(b.Body, cw, schema{attrs: map[string]func(*hclsyntax.Attribute){
					"command":       func(a *hclsyntax.Attribute) { cs.Command = p.stringPtr(a, cw) },
					"args":          func(a *hclsyntax.Attribute) { cs.Args = p.stringList(a, cw) },
					"timeout":       func(a *hclsyntax.Attribute) { cs.Timeout = p.durationPtr(a, cw) },
					"fail_on_error": func(a *hclsyntax.Attribute) { cs.FailOnError = p.boolPtr(a, cw) },
				}})
				if cs.Command == nil {
					p.errorf(b.TypeRange, "missing command in %s", cw)
				}
				t.ChangeScript = cs
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
	if t.ChangeMode != nil && *t.ChangeMode == "script" && t.ChangeScript == nil {
		p.errorf(b.TypeRange, "%s: change_mode \"script\" needs a change_script", where)
	}
	return t
}
