package agent

import (
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclparse"
	"github.com/zclconf/go-cty/cty"
)

// ConfigError lists every problem found in the agent's config files, each
// with its file:line:column so an editor can jump to it.
type ConfigError struct {
	Diagnostics hcl.Diagnostics
}

func (e *ConfigError) Error() string {
	lines := make([]string, 0, len(e.Diagnostics))
	for _, d := range e.Diagnostics {
		if d.Severity != hcl.DiagError {
			continue
		}
		msg := d.Summary
		if d.Detail != "" {
			msg += "; " + d.Detail
		}
		if d.Subject != nil {
			msg = fmt.Sprintf("%s:%d:%d: %s", d.Subject.Filename, d.Subject.Start.Line, d.Subject.Start.Column, msg)
		}
		lines = append(lines, msg)
	}
	return strings.Join(lines, "\n")
}

// LoadConfigPath reads one -config argument: a file, or a directory whose
// *.hcl and *.json files are read in lexical order (not recursively), as
// upstream does. The files are merged in that order.
func LoadConfigPath(path string) (*Config, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("reading config: %w", err)
	}
	if !fi.IsDir() {
		return ParseConfigFile(path)
	}
	entries, err := os.ReadDir(path)
	if err != nil {
		return nil, fmt.Errorf("reading config directory: %w", err)
	}
	out := &Config{}
	for _, e := range entries {
		ext := filepath.Ext(e.Name())
		if e.IsDir() || (ext != ".hcl" && ext != ".json") {
			continue
		}
		c, err := ParseConfigFile(filepath.Join(path, e.Name()))
		if err != nil {
			return nil, err
		}
		out = out.Merge(c)
	}
	return out, nil
}

// ParseConfigFile parses one agent config file, HCL or (by extension) JSON.
func ParseConfigFile(path string) (*Config, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading config: %w", err)
	}
	return ParseConfig(path, src)
}

// ParseConfig parses agent config source; filename names it in errors and
// selects JSON syntax when it ends in ".json". Keys the agent does not know
// are errors: a typo must not silently leave a setting at its default.
// Fields not set in src are zero, so the result is meant to be merged over
// DefaultConfig or DevConfig.
func ParseConfig(filename string, src []byte) (*Config, error) {
	p := hclparse.NewParser()
	var file *hcl.File
	var diags hcl.Diagnostics
	if strings.HasSuffix(filename, ".json") {
		file, diags = p.ParseJSON(src, filename)
	} else {
		file, diags = p.ParseHCL(src, filename)
	}
	if diags.HasErrors() {
		return nil, &ConfigError{Diagnostics: diags}
	}
	d := &configDecoder{}
	c := d.root(file.Body)
	if d.diags.HasErrors() {
		return nil, &ConfigError{Diagnostics: d.diags}
	}
	return c, nil
}

// configDecoder accumulates diagnostics while decoding one file, so every
// problem is reported in one pass.
type configDecoder struct {
	diags hcl.Diagnostics
}

func (d *configDecoder) errorf(rng hcl.Range, format string, args ...any) {
	r := rng
	d.diags = append(d.diags, &hcl.Diagnostic{
		Severity: hcl.DiagError,
		Summary:  fmt.Sprintf(format, args...),
		Subject:  &r,
	})
}

// content decodes body against schema; unknown keys become errors here.
func (d *configDecoder) content(body hcl.Body, attrs []string, blocks ...hcl.BlockHeaderSchema) *hcl.BodyContent {
	schema := &hcl.BodySchema{Blocks: blocks}
	for _, a := range attrs {
		schema.Attributes = append(schema.Attributes, hcl.AttributeSchema{Name: a})
	}
	content, diags := body.Content(schema)
	d.diags = append(d.diags, diags...)
	return content
}

// single returns the only block of type typ, reporting any repetition.
func (d *configDecoder) single(content *hcl.BodyContent, typ string) *hcl.Block {
	var found *hcl.Block
	for _, b := range content.Blocks {
		if b.Type != typ {
			continue
		}
		if found != nil {
			d.errorf(b.DefRange, "duplicate %s block; the first is at line %d", typ, found.DefRange.Start.Line)
			continue
		}
		found = b
	}
	return found
}

func (d *configDecoder) root(body hcl.Body) *Config {
	content := d.content(body,
		[]string{"name", "region", "datacenter", "data_dir", "bind_addr", "log_level"},
		hcl.BlockHeaderSchema{Type: "advertise"},
		hcl.BlockHeaderSchema{Type: "ports"},
		hcl.BlockHeaderSchema{Type: "server"},
		hcl.BlockHeaderSchema{Type: "client"},
		hcl.BlockHeaderSchema{Type: "plugin", LabelNames: []string{"driver"}},
	)
	if content == nil {
		return &Config{}
	}
	c := &Config{}
	attrs := content.Attributes
	d.str(attrs["name"], &c.NodeName)
	d.str(attrs["region"], &c.Region)
	d.str(attrs["datacenter"], &c.Datacenter)
	d.str(attrs["data_dir"], &c.DataDir)
	d.str(attrs["bind_addr"], &c.BindAddr)
	d.str(attrs["log_level"], &c.LogLevel)

	if b := d.single(content, "advertise"); b != nil {
		c.AdvertiseAddrs = &AdvertiseAddrs{}
		if bc := d.content(b.Body, []string{"http", "rpc", "serf"}); bc != nil {
			d.str(bc.Attributes["http"], &c.AdvertiseAddrs.HTTP)
			d.str(bc.Attributes["rpc"], &c.AdvertiseAddrs.RPC)
			var ignored string // serf advertise: accepted, no gossip yet
			d.str(bc.Attributes["serf"], &ignored)
		}
	}
	if b := d.single(content, "ports"); b != nil {
		c.Ports = &Ports{}
		if bc := d.content(b.Body, []string{"http", "rpc", "serf"}); bc != nil {
			d.port(bc.Attributes["http"], &c.Ports.HTTP)
			d.port(bc.Attributes["rpc"], &c.Ports.RPC)
			d.port(bc.Attributes["serf"], &c.Ports.Serf)
		}
	}
	if b := d.single(content, "server"); b != nil {
		c.Server = d.server(b.Body)
	}
	if b := d.single(content, "client"); b != nil {
		c.Client = d.client(b.Body)
	}
	for _, b := range content.Blocks {
		if b.Type != "plugin" {
			continue
		}
		name := b.Labels[0]
		if i := slices.IndexFunc(c.Plugins, func(p *PluginConfig) bool { return p.Name == name }); i >= 0 {
			d.errorf(b.DefRange, "duplicate plugin %q block", name)
			continue
		}
		c.Plugins = append(c.Plugins, d.plugin(b.Body, name))
	}
	return c
}

func (d *configDecoder) server(body hcl.Body) *ServerConfig {
	s := &ServerConfig{}
	content := d.content(body, []string{
		"enabled", "bootstrap_expect", "heartbeat_grace", "min_heartbeat_ttl",
		"max_heartbeats_per_second", "failover_heartbeat_ttl", "num_schedulers",
	})
	if content == nil {
		return s
	}
	a := content.Attributes
	d.boolean(a["enabled"], &s.Enabled)
	d.integer(a["bootstrap_expect"], &s.BootstrapExpect, 0, 100)
	d.duration(a["heartbeat_grace"], &s.HeartbeatGrace)
	d.duration(a["min_heartbeat_ttl"], &s.MinHeartbeatTTL)
	d.duration(a["failover_heartbeat_ttl"], &s.FailoverHeartbeatTTL)
	d.float(a["max_heartbeats_per_second"], &s.MaxHeartbeatsPerSecond)
	d.integer(a["num_schedulers"], &s.NumSchedulers, 0, 1024)
	return s
}

func (d *configDecoder) client(body hcl.Body) *ClientConfig {
	c := &ClientConfig{}
	content := d.content(body, []string{"enabled", "servers", "node_class", "node_pool"},
		hcl.BlockHeaderSchema{Type: "meta"})
	if content == nil {
		return c
	}
	a := content.Attributes
	d.boolean(a["enabled"], &c.Enabled)
	d.stringList(a["servers"], &c.Servers)
	d.str(a["node_class"], &c.NodeClass)
	d.str(a["node_pool"], &c.NodePool)
	if b := d.single(content, "meta"); b != nil {
		c.Meta = map[string]string{}
		for k, v := range d.freeform(b.Body) {
			c.Meta[k] = fmt.Sprint(v)
		}
	}
	return c
}

func (d *configDecoder) plugin(body hcl.Body, name string) *PluginConfig {
	p := &PluginConfig{Name: name}
	content := d.content(body, nil, hcl.BlockHeaderSchema{Type: "config"})
	if content == nil {
		return p
	}
	if b := d.single(content, "config"); b != nil {
		p.Config = d.freeform(b.Body)
	}
	return p
}

// freeform decodes a block of arbitrary attributes (meta, plugin config).
func (d *configDecoder) freeform(body hcl.Body) map[string]any {
	attrs, diags := body.JustAttributes()
	d.diags = append(d.diags, diags...)
	out := make(map[string]any, len(attrs))
	for name, a := range attrs {
		if v, ok := d.value(a); ok {
			out[name] = ctyToGo(v)
		}
	}
	return out
}

// value evaluates an attribute. Config files are static: there are no
// variables or functions, so any reference is an error at its position.
func (d *configDecoder) value(a *hcl.Attribute) (cty.Value, bool) {
	v, diags := a.Expr.Value(nil)
	d.diags = append(d.diags, diags...)
	if diags.HasErrors() {
		return cty.NilVal, false
	}
	if v.IsNull() {
		d.errorf(a.Expr.Range(), "%s must not be null", a.Name)
		return cty.NilVal, false
	}
	return v, true
}

func (d *configDecoder) typeError(a *hcl.Attribute, want string, got cty.Value) {
	d.errorf(a.Expr.Range(), "%s must be %s, not %s", a.Name, want, got.Type().FriendlyName())
}

func (d *configDecoder) str(a *hcl.Attribute, dst *string) {
	if a == nil {
		return
	}
	v, ok := d.value(a)
	if !ok {
		return
	}
	if v.Type() != cty.String {
		d.typeError(a, "a string", v)
		return
	}
	*dst = v.AsString()
}

func (d *configDecoder) boolean(a *hcl.Attribute, dst *bool) {
	if a == nil {
		return
	}
	v, ok := d.value(a)
	if !ok {
		return
	}
	if v.Type() != cty.Bool {
		d.typeError(a, "true or false", v)
		return
	}
	*dst = v.True()
}

func (d *configDecoder) integer(a *hcl.Attribute, dst *int, lo, hi int) {
	if a == nil {
		return
	}
	v, ok := d.value(a)
	if !ok {
		return
	}
	if v.Type() != cty.Number {
		d.typeError(a, "a whole number", v)
		return
	}
	bf := v.AsBigFloat()
	n, acc := bf.Int64()
	if !bf.IsInt() || acc != big.Exact || n < int64(lo) || n > int64(hi) {
		d.errorf(a.Expr.Range(), "%s must be a whole number between %d and %d", a.Name, lo, hi)
		return
	}
	*dst = int(n)
}

func (d *configDecoder) port(a *hcl.Attribute, dst *int) { d.integer(a, dst, 0, 65535) }

func (d *configDecoder) float(a *hcl.Attribute, dst *float64) {
	if a == nil {
		return
	}
	v, ok := d.value(a)
	if !ok {
		return
	}
	if v.Type() != cty.Number {
		d.typeError(a, "a number", v)
		return
	}
	f, _ := v.AsBigFloat().Float64()
	*dst = f
}

func (d *configDecoder) duration(a *hcl.Attribute, dst *time.Duration) {
	if a == nil {
		return
	}
	v, ok := d.value(a)
	if !ok {
		return
	}
	if v.Type() != cty.String {
		d.typeError(a, `a duration string such as "10s"`, v)
		return
	}
	dur, err := time.ParseDuration(v.AsString())
	if err != nil || dur < 0 {
		d.errorf(a.Expr.Range(), "%s: invalid duration %q; use a form such as \"10s\" or \"1m30s\"", a.Name, v.AsString())
		return
	}
	*dst = dur
}

func (d *configDecoder) stringList(a *hcl.Attribute, dst *[]string) {
	if a == nil {
		return
	}
	v, ok := d.value(a)
	if !ok {
		return
	}
	if !v.Type().IsListType() && !v.Type().IsTupleType() && !v.Type().IsSetType() {
		d.typeError(a, "a list of strings", v)
		return
	}
	var out []string
	for it := v.ElementIterator(); it.Next(); {
		_, el := it.Element()
		if el.IsNull() || el.Type() != cty.String {
			d.errorf(a.Expr.Range(), "%s must be a list of strings", a.Name)
			return
		}
		out = append(out, el.AsString())
	}
	*dst = out
}

// ctyToGo converts a known value to the plain Go types drivers decode:
// string, bool, int64 or float64, []any and map[string]any.
func ctyToGo(v cty.Value) any {
	if v.IsNull() || !v.IsKnown() {
		return nil
	}
	t := v.Type()
	switch {
	case t == cty.String:
		return v.AsString()
	case t == cty.Bool:
		return v.True()
	case t == cty.Number:
		bf := v.AsBigFloat()
		if n, acc := bf.Int64(); bf.IsInt() && acc == big.Exact {
			return n
		}
		f, _ := bf.Float64()
		return f
	case t.IsListType() || t.IsTupleType() || t.IsSetType():
		var out []any
		for it := v.ElementIterator(); it.Next(); {
			_, el := it.Element()
			out = append(out, ctyToGo(el))
		}
		return out
	case t.IsMapType() || t.IsObjectType():
		out := map[string]any{}
		for it := v.ElementIterator(); it.Next(); {
			k, el := it.Element()
			out[k.AsString()] = ctyToGo(el)
		}
		return out
	}
	return nil
}
