package jobspec

import (
	"github.com/hashicorp/hcl/v2/hclsyntax"

	"github.com/nomad-edge/nomad/api"
)

// identity decodes a task's `identity { name aud env file ttl change_mode
// change_signal }`. Only the default identity is signed, with the
// servers' audience and lifetime, and a renewal only rewrites the file:
// a name other than "default", aud, ttl, change_mode other than "noop"
// and change_signal are refused here at their position, and by the
// servers for jobs submitted as JSON.
func (p *parser) identity(b *hclsyntax.Block, parent string) *api.WorkloadIdentity {
	w := &api.WorkloadIdentity{}
	where := blockWhere(b.Type, parent)
	refuse := func(why string) func(*hclsyntax.Attribute) {
		return func(a *hclsyntax.Attribute) {
			p.errorf(a.NameRange, "%s: %s is not supported: %s", where, a.Name, why)
		}
	}
	p.walk(b.Body, where, schema{attrs: map[string]func(*hclsyntax.Attribute){
		"name": func(a *hclsyntax.Attribute) {
			s, ok := p.stringVal(a, where)
			if ok && s != "default" {
				p.errorf(a.Expr.Range(), "%s: name %q is not supported: only the default identity (name \"default\") is signed", where, s)
			}
			w.Name = s
		},
		"env": func(a *hclsyntax.Attribute) {
			if v := p.boolPtr(a, where); v != nil {
				w.Env = *v
			}
		},
		"file": func(a *hclsyntax.Attribute) {
			if v := p.boolPtr(a, where); v != nil {
				w.File = *v
			}
		},
		"change_mode": func(a *hclsyntax.Attribute) {
			s, ok := p.stringVal(a, where)
			if ok && s != "noop" {
				p.errorf(a.Expr.Range(), "%s: change_mode %q is not supported: a renewed identity replaces the file without telling the task (change_mode \"noop\")", where, s)
			}
			w.ChangeMode = s
		},
		"aud":           refuse("the default identity's audience is fixed by the servers"),
		"ttl":           refuse("the servers sign the default identity for one hour and the client renews it"),
		"change_signal": refuse("it goes with change_mode \"signal\", which is not supported"),
	}})
	return w
}
