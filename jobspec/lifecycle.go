package jobspec

import (
	"slices"
	"strings"

	"github.com/hashicorp/hcl/v2/hclsyntax"

	"github.com/nomad-edge/nomad/api"
)

// lifecycleHooks are the values of lifecycle.hook.
var lifecycleHooks = []string{api.TaskLifecycleHookPrestart, api.TaskLifecycleHookPoststart, api.TaskLifecycleHookPoststop}

// lifecycle decodes a task's `lifecycle { hook sidecar }`. The hook is
// required and checked here, at its position: a block without one would
// make a sidecar setting mean nothing (upstream silently runs such a task
// as a main task).
func (p *parser) lifecycle(b *hclsyntax.Block, parent string) *api.TaskLifecycle {
	l := &api.TaskLifecycle{}
	where := blockWhere(b.Type, parent)
	hookSet := false
	p.walk(b.Body, where, schema{attrs: map[string]func(*hclsyntax.Attribute){
		"hook": func(a *hclsyntax.Attribute) {
			hookSet = true
			s, ok := p.stringVal(a, where)
			if !ok {
				return
			}
			if !slices.Contains(lifecycleHooks, s) {
				p.errorf(a.Expr.Range(), "%s: invalid hook %q; hook must be one of %s", where, s, strings.Join(quoteAll(lifecycleHooks), ", "))
				return
			}
			l.Hook = s
		},
		"sidecar": func(a *hclsyntax.Attribute) {
			if v := p.boolPtr(a, where); v != nil {
				l.Sidecar = *v
			}
		},
	}})
	if !hookSet {
		p.errorf(b.TypeRange, "%s: missing hook = %s", where, strings.Join(quoteAll(lifecycleHooks), " | "))
	}
	return l
}
