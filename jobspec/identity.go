package jobspec

import (
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"

	"github.com/nomad-edge/nomad/api"
)

// identity decodes one of a task's `identity { name aud env file ttl
// change_mode change_signal }` blocks into the task, as upstream: a block
// without a name (or named "default") is the default identity, with the
// servers' audience (aud refused on it); a named one goes to Identities
// and needs an aud. A second default block, or a name used twice, is
// refused at its position.
func (p *parser) identity(b *hclsyntax.Block, parent string, t *api.Task) {
	w := &api.WorkloadIdentity{}
	where := blockWhere(b.Type, parent)
	var nameRange, audRange *hcl.Range
	p.walk(b.Body, where, schema{attrs: map[string]func(*hclsyntax.Attribute){
		"name": func(a *hclsyntax.Attribute) {
			if s, ok := p.stringVal(a, where); ok {
				w.Name = s
				r := a.Expr.Range()
				nameRange = &r
			}
		},
		"aud": func(a *hclsyntax.Attribute) {
			w.Audience = p.stringList(a, where)
			r := a.NameRange
			audRange = &r
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
	}})
	if w.ChangeMode == "signal" && w.ChangeSignal == "" {
		p.errorf(b.TypeRange, "%s: change_mode \"signal\" needs a change_signal", where)
	}
	if w.Name == "" || w.Name == "default" {
		switch {
		case t.Identity != nil:
			p.errorf(b.TypeRange, "%s: a second default identity (a block without a name, or named \"default\"); give it a name", where)
		case audRange != nil:
			p.errorf(*audRange, "%s: aud is not supported on the default identity: its audience is the servers'; give the block a name for another audience", where)
		}
		t.Identity = w
		return
	}
	for _, o := range t.Identities {
		if o.Name == w.Name {
			p.errorf(*nameRange, "%s: identity %q is defined twice", where, w.Name)
			return
		}
	}
	if len(w.Audience) == 0 {
		p.errorf(b.TypeRange, "%s: identity %q needs an aud: a named identity is for another party, which checks its audience", where, w.Name)
	}
	t.Identities = append(t.Identities, w)
}
