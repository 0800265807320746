package jobspec

import (
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2/hclsyntax"

	"github.com/nomad-edge/nomad/api"
)

// periodic decodes `periodic { crons cron prohibit_overlap time_zone
// enabled }`. A time zone the machine cannot load is reported here, at its
// position; cron expressions are checked by the server, which names them.
func (p *parser) periodic(b *hclsyntax.Block, parent string) *api.PeriodicConfig {
	c := &api.PeriodicConfig{}
	where := blockWhere(b.Type, parent)
	p.walk(b.Body, where, schema{attrs: map[string]func(*hclsyntax.Attribute){
		"cron":             func(a *hclsyntax.Attribute) { c.Spec = p.stringPtr(a, where) },
		"crons":            func(a *hclsyntax.Attribute) { c.Specs = p.stringList(a, where) },
		"prohibit_overlap": func(a *hclsyntax.Attribute) { c.ProhibitOverlap = p.boolPtr(a, where) },
		"enabled":          func(a *hclsyntax.Attribute) { c.Enabled = p.boolPtr(a, where) },
		"time_zone": func(a *hclsyntax.Attribute) {
			c.TimeZone = p.stringPtr(a, where)
			if c.TimeZone == nil {
				return
			}
			if _, err := time.LoadLocation(*c.TimeZone); err != nil {
				p.errorf(a.Expr.Range(), "%s: time_zone %q is not a known time zone: %v", where, *c.TimeZone, err)
			}
		},
	}})
	if c.Spec != nil && len(c.Specs) > 0 {
		p.errorf(b.TypeRange, "%s: set either cron or crons, not both", where)
	}
	if c.Spec == nil && c.Specs == nil {
		p.errorf(b.TypeRange, "%s: missing crons = [\"<cron expression>\", ...]", where)
	}
	return c
}

// payloadModes are the values of parameterized.payload.
var payloadModes = []string{api.DispatchPayloadOptional, api.DispatchPayloadRequired, api.DispatchPayloadForbidden}

// parameterized decodes `parameterized { payload meta_required
// meta_optional }`.
func (p *parser) parameterized(b *hclsyntax.Block, parent string) *api.ParameterizedJobConfig {
	c := &api.ParameterizedJobConfig{}
	where := blockWhere(b.Type, parent)
	p.walk(b.Body, where, schema{attrs: map[string]func(*hclsyntax.Attribute){
		"payload": func(a *hclsyntax.Attribute) {
			s, ok := p.stringVal(a, where)
			if !ok {
				return
			}
			if !slices.Contains(payloadModes, s) {
				p.errorf(a.Expr.Range(), "%s: payload must be one of %s (got %q)", where, strings.Join(quoteAll(payloadModes), ", "), s)
				return
			}
			c.Payload = s
		},
		"meta_required": func(a *hclsyntax.Attribute) { c.MetaRequired = p.stringList(a, where) },
		"meta_optional": func(a *hclsyntax.Attribute) { c.MetaOptional = p.stringList(a, where) },
	}})
	return c
}

// dispatchPayload decodes a task's `dispatch_payload { file }`. The file
// must stay inside the task's local/ directory.
func (p *parser) dispatchPayload(b *hclsyntax.Block, parent string) *api.DispatchPayloadConfig {
	c := &api.DispatchPayloadConfig{}
	where := blockWhere(b.Type, parent)
	p.walk(b.Body, where, schema{attrs: map[string]func(*hclsyntax.Attribute){
		"file": func(a *hclsyntax.Attribute) {
			s, ok := p.stringVal(a, where)
			if !ok {
				return
			}
			if s == "" || strings.HasPrefix(s, "/") || escapes(s) {
				p.errorf(a.Expr.Range(), "%s: file %q must be a relative path inside the task's local/ directory", where, s)
				return
			}
			c.File = s
		},
	}})
	if c.File == "" && b.Body.Attributes["file"] == nil {
		p.errorf(b.TypeRange, "%s: missing file = \"<path in local/>\"", where)
	}
	return c
}

// escapes reports whether a relative path climbs out of its directory.
func escapes(path string) bool {
	depth := 0
	for _, part := range strings.Split(path, "/") {
		switch part {
		case "", ".":
		case "..":
			if depth--; depth < 0 {
				return true
			}
		default:
			depth++
		}
	}
	return depth == 0
}

func quoteAll(in []string) []string {
	out := make([]string, len(in))
	for i, s := range in {
		out[i] = `"` + s + `"`
	}
	return out
}
