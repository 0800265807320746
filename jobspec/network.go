package jobspec

import (
	"fmt"

	"github.com/hashicorp/hcl/v2/hclsyntax"

	"github.com/nomad-edge/nomad/api"
)

// network decodes a group's `network { mode hostname dns { servers
// searches options } port "<label>" { static to host_network } }`. A port with `static` is reserved, one without is
// dynamic, as upstream's wire shape has them. Which modes work is
// validation, done by the server.
func (p *parser) network(b *hclsyntax.Block, parent string) *api.NetworkResource {
	n := &api.NetworkResource{}
	where := blockWhere(b.Type, parent)
	p.walk(b.Body, where, schema{
		attrs: map[string]func(*hclsyntax.Attribute){
			"mode": func(a *hclsyntax.Attribute) {
				if s, ok := p.stringVal(a, where); ok {
					n.Mode = s
				}
			},
			"hostname": func(a *hclsyntax.Attribute) {
				if s, ok := p.stringVal(a, where); ok {
					n.Hostname = s
				}
			},
		},
		blocks: map[string]blockSpec{
			"dns": {decode: func(b *hclsyntax.Block, _ string) {
				n.DNS = p.dns(b, where)
			}},
			"port": {label: "port label", multi: true, decode: func(b *hclsyntax.Block, label string) {
				port, static := p.port(b, label, where)
				if static {
					n.ReservedPorts = append(n.ReservedPorts, port)
				} else {
					n.DynamicPorts = append(n.DynamicPorts, port)
				}
			}},
		},
	})
	return n
}

// port decodes `port "<label>" { static to host_network }` and reports
// whether it has a static host port.
func (p *parser) port(b *hclsyntax.Block, label, parent string) (api.Port, bool) {
	port := api.Port{Label: label}
	static := false
	where := fmt.Sprintf("port %q of %s", label, parent)
	p.walk(b.Body, where, schema{attrs: map[string]func(*hclsyntax.Attribute){
		"static": func(a *hclsyntax.Attribute) {
			if v := p.intPtr(a, where); v != nil {
				port.Value, static = *v, true
			}
		},
		"to": func(a *hclsyntax.Attribute) {
			if v := p.intPtr(a, where); v != nil {
				port.To = *v
			}
		},
		"host_network": func(a *hclsyntax.Attribute) {
			if s, ok := p.stringVal(a, where); ok {
				port.HostNetwork = s
			}
		},
	}})
	return port, static
}

// dns decodes `dns { servers searches options }`.
func (p *parser) dns(b *hclsyntax.Block, parent string) *api.DNSConfig {
	d := &api.DNSConfig{}
	where := blockWhere(b.Type, parent)
	p.walk(b.Body, where, schema{attrs: map[string]func(*hclsyntax.Attribute){
		"servers":  func(a *hclsyntax.Attribute) { d.Servers = p.stringList(a, where) },
		"searches": func(a *hclsyntax.Attribute) { d.Searches = p.stringList(a, where) },
		"options":  func(a *hclsyntax.Attribute) { d.Options = p.stringList(a, where) },
	}})
	return d
}
