package jobspec

import (
	"fmt"
	"time"

	"github.com/hashicorp/hcl/v2/hclsyntax"

	"github.com/nomad-edge/nomad/api"
)

// service decodes a group's or task's `service { name port tags
// canary_tags address address_mode task on_update provider meta
// canary_meta check check_restart }`. provider = "consul" is refused here,
// at its position: there is no Consul integration, and a job that
// registered nowhere would look healthy. Everything else about the values
// is validation, done by the server, so JSON jobs get the same answers.
func (p *parser) service(b *hclsyntax.Block, parent string) *api.Service {
	s := &api.Service{}
	where := blockWhere(b.Type, parent)
	str := func(dst *string) func(*hclsyntax.Attribute) {
		return func(a *hclsyntax.Attribute) {
			if v, ok := p.stringVal(a, where); ok {
				*dst = v
			}
		}
	}
	p.walk(b.Body, where, schema{
		attrs: map[string]func(*hclsyntax.Attribute){
			"name":         str(&s.Name),
			"port":         str(&s.PortLabel),
			"address":      str(&s.Address),
			"address_mode": str(&s.AddressMode),
			"task":         str(&s.TaskName),
			"on_update":    str(&s.OnUpdate),
			"provider": func(a *hclsyntax.Attribute) {
				v, ok := p.stringVal(a, where)
				if !ok {
					return
				}
				if v == api.ServiceProviderConsul {
					p.errorf(a.Expr.Range(), "%s: provider %q is not supported: there is no Consul integration; use provider = %q (the default)", where, v, api.ServiceProviderNomad)
					return
				}
				s.Provider = v
			},
			"tags":        func(a *hclsyntax.Attribute) { s.Tags = p.stringList(a, where) },
			"canary_tags": func(a *hclsyntax.Attribute) { s.CanaryTags = p.stringList(a, where) },
			"meta":        func(a *hclsyntax.Attribute) { s.Meta = p.stringMapAttr(a, where) },
			"canary_meta": func(a *hclsyntax.Attribute) { s.CanaryMeta = p.stringMapAttr(a, where) },
		},
		blocks: map[string]blockSpec{
			"meta":        {decode: func(b *hclsyntax.Block, _ string) { s.Meta = p.stringMapBlock(b, where) }},
			"canary_meta": {decode: func(b *hclsyntax.Block, _ string) { s.CanaryMeta = p.stringMapBlock(b, where) }},
			"check": {multi: true, decode: func(b *hclsyntax.Block, _ string) {
				s.Checks = append(s.Checks, p.check(b, where, len(s.Checks)+1))
			}},
			"check_restart": {decode: func(b *hclsyntax.Block, _ string) {
				s.CheckRestart = p.checkRestart(b, where)
			}},
		},
	})
	return s
}

// check decodes `check { name type command args path protocol port method
// header interval timeout initial_status tls_skip_verify expose
// success_before_passing failures_before_critical on_update task
// address_mode check_restart }`; n is its position in the service, for
// messages.
func (p *parser) check(b *hclsyntax.Block, parent string, n int) api.ServiceCheck {
	c := api.ServiceCheck{}
	where := fmt.Sprintf("check %d of %s", n, parent)
	str := func(dst *string) func(*hclsyntax.Attribute) {
		return func(a *hclsyntax.Attribute) {
			if v, ok := p.stringVal(a, where); ok {
				*dst = v
			}
		}
	}
	dur := func(dst *time.Duration) func(*hclsyntax.Attribute) {
		return func(a *hclsyntax.Attribute) {
			if d := p.durationPtr(a, where); d != nil {
				*dst = *d
			}
		}
	}
	boolean := func(dst *bool) func(*hclsyntax.Attribute) {
		return func(a *hclsyntax.Attribute) {
			if v := p.boolPtr(a, where); v != nil {
				*dst = *v
			}
		}
	}
	integer := func(dst *int) func(*hclsyntax.Attribute) {
		return func(a *hclsyntax.Attribute) {
			if v := p.intPtr(a, where); v != nil {
				*dst = *v
			}
		}
	}
	p.walk(b.Body, where, schema{
		attrs: map[string]func(*hclsyntax.Attribute){
			"name":                     str(&c.Name),
			"type":                     str(&c.Type),
			"command":                  str(&c.Command),
			"args":                     func(a *hclsyntax.Attribute) { c.Args = p.stringList(a, where) },
			"path":                     str(&c.Path),
			"protocol":                 str(&c.Protocol),
			"port":                     str(&c.PortLabel),
			"address_mode":             str(&c.AddressMode),
			"method":                   str(&c.Method),
			"interval":                 dur(&c.Interval),
			"timeout":                  dur(&c.Timeout),
			"initial_status":           str(&c.InitialStatus),
			"tls_skip_verify":          boolean(&c.TLSSkipVerify),
			"expose":                   boolean(&c.Expose),
			"success_before_passing":   integer(&c.SuccessBeforePassing),
			"failures_before_critical": integer(&c.FailuresBeforeCritical),
			"on_update":                str(&c.OnUpdate),
			"task":                     str(&c.TaskName),
		},
		blocks: map[string]blockSpec{
			"header": {decode: func(b *hclsyntax.Block, _ string) { c.Header = p.header(b, where) }},
			"check_restart": {decode: func(b *hclsyntax.Block, _ string) {
				c.CheckRestart = p.checkRestart(b, where)
			}},
		},
	})
	return c
}

// header decodes `header { Name = ["v1", "v2"] }`, upstream's form: each
// header takes a list of values.
func (p *parser) header(b *hclsyntax.Block, parent string) map[string][]string {
	where := blockWhere(b.Type, parent)
	out := make(map[string][]string, len(b.Body.Attributes))
	for name, a := range b.Body.Attributes {
		if l := p.stringList(a, where); l != nil {
			out[name] = l
		}
	}
	for _, nb := range b.Body.Blocks {
		p.errorf(nb.TypeRange, "unsupported block %q in %s; it holds only Name = [\"value\"] pairs", nb.Type, where)
	}
	return out
}

// checkRestart decodes `check_restart { limit grace ignore_warnings }`.
func (p *parser) checkRestart(b *hclsyntax.Block, parent string) *api.CheckRestart {
	r := &api.CheckRestart{}
	where := blockWhere(b.Type, parent)
	p.walk(b.Body, where, schema{attrs: map[string]func(*hclsyntax.Attribute){
		"limit": func(a *hclsyntax.Attribute) {
			if v := p.intPtr(a, where); v != nil {
				r.Limit = *v
			}
		},
		"grace": func(a *hclsyntax.Attribute) { r.Grace = p.durationPtr(a, where) },
		"ignore_warnings": func(a *hclsyntax.Attribute) {
			if v := p.boolPtr(a, where); v != nil {
				r.IgnoreWarnings = *v
			}
		},
	}})
	return r
}
