package jobspec

import (
	"github.com/hashicorp/hcl/v2/hclsyntax"

	"github.com/nomad-edge/nomad/api"
)

// identity decodes a task's `identity { name aud env file ttl change_mode
// change_signal }`. Only the default identity is signed, with the
// servers' audience: a name other than "default" and aud are refused here
// at their position, and by the servers for jobs submitted as JSON.
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
			if ok && s != "noop" && s != "restart" && s != "signal" {
				p.errorf(a.Expr.Range(), "%s: invalid change_mode %q; must be one of noop, restart, signal", where, s)
			}
			w.ChangeMode = s
		},
		"change_signal": func(a *hclsyntax.Attribute) {
			if s, ok := p.stringVal(a, where); ok {
				w.ChangeSignal = s
			}
		},
		"ttl": func(a *hclsyntax.Attribute) {
			if d := p.durationPtr(a, where); d != nil {
				w.TTL = *d
			}
		},
		"aud": refuse("the default identity's audience is fixed by the servers"),
	}})
	if w.ChangeMode == "signal" && w.ChangeSignal == "" {
		p.errorf(b.TypeRange, "%s: change_mode \"signal\" needs a change_signal", where)
	}
	return w
}
