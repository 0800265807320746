package agent

import (
	"slices"
	"time"

	"github.com/hashicorp/hcl/v2"

	"github.com/nomad-edge/nomad/client/template"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// TemplateConfig is the client's `template` block: upstream's settings
// for every template the client renders. Unset fields are nil, so that a
// later file's value wins when merged and upstream's defaults fill the
// rest (template.DefaultClientConfig).
type TemplateConfig struct {
	FunctionDenylist   []string       `json:",omitempty"`
	DisableFileSandbox *bool          `json:",omitempty"`
	MaxStale           *time.Duration `json:",omitempty"`
	BlockQueryWait     *time.Duration `json:",omitempty"`
	Wait               *WaitConfig    `json:",omitempty"`
	WaitBounds         *WaitConfig    `json:",omitempty"`
	NomadRetry         *RetryConfig   `json:",omitempty"`
}

// WaitConfig is a `wait { min max }` or `wait_bounds { min max }` block.
type WaitConfig struct {
	Min *time.Duration `json:",omitempty"`
	Max *time.Duration `json:",omitempty"`
}

// RetryConfig is `nomad_retry { attempts backoff max_backoff }`.
type RetryConfig struct {
	Backoff    *time.Duration `json:",omitempty"`
	MaxBackoff *time.Duration `json:",omitempty"`
}

// unsupportedTemplate are upstream's template keys this client cannot
// honour.
var unsupportedTemplate = map[string]string{
	"consul_retry":       "there is no Consul integration; templates read Nomad variables and services only",
	"vault_retry":        "there is no Vault integration; templates read Nomad variables and services only",
	"function_blacklist": "upstream's deprecated name; use function_denylist",
}

// clientTemplate decodes `client { template { ... } }`.
func (d *configDecoder) clientTemplate(body hcl.Body) *TemplateConfig {
	path := "client.template."
	b := d.open(body, path, bodySpec{
		attrs:       []string{"function_denylist", "disable_file_sandbox", "max_stale", "block_query_wait"},
		blocks:      []hcl.BlockHeaderSchema{{Type: "wait"}, {Type: "wait_bounds"}, {Type: "nomad_retry"}},
		unsupported: unsupportedTemplate,
	})
	t := &TemplateConfig{}
	var deny []string
	if b.strList("function_denylist", &deny) {
		t.FunctionDenylist = append([]string{}, deny...)
	}
	b.optBool("disable_file_sandbox", &t.DisableFileSandbox)
	b.optDuration("max_stale", &t.MaxStale)
	b.optDuration("block_query_wait", &t.BlockQueryWait)
	for _, name := range []string{"wait", "wait_bounds"} {
		blk := b.sub(name)
		if blk == nil {
			continue
		}
		wb := d.open(blk.Body, path+name+".", bodySpec{attrs: []string{"min", "max"}})
		w := &WaitConfig{}
		wb.optDuration("min", &w.Min)
		wb.optDuration("max", &w.Max)
		if w.Min != nil && w.Max != nil && *w.Max > 0 && *w.Max < *w.Min {
			d.errorf(blk.DefRange, "%s%s: max (%s) must not be below min (%s)", path, name, *w.Max, *w.Min)
		}
		if name == "wait" {
			t.Wait = w
		} else {
			t.WaitBounds = w
		}
	}
	if blk := b.sub("nomad_retry"); blk != nil {
		rb := d.open(blk.Body, path+"nomad_retry.", bodySpec{attrs: []string{"attempts", "backoff", "max_backoff"}})
		r := &RetryConfig{}
		if a := rb.attr("attempts"); a != nil {
			var n int
			// Upstream gives up after attempts and fails the task; a
			// node cut off from its servers keeps its templates'
			// content instead, for as long as the cut lasts.
			if rb.integer("attempts", &n, 0, 1<<31-1) && n != 0 {
				d.errorf(a.Expr.Range(), "%snomad_retry.attempts = %d is not supported by this version: templates keep their content and retry for as long as the servers are out of reach; only 0 (unlimited) is accepted", path, n)
			}
		}
		rb.optDuration("backoff", &r.Backoff)
		rb.optDuration("max_backoff", &r.MaxBackoff)
		if r.Backoff != nil && r.MaxBackoff != nil && *r.MaxBackoff < *r.Backoff {
			d.errorf(blk.DefRange, "%snomad_retry: max_backoff (%s) must not be below backoff (%s)", path, *r.MaxBackoff, *r.Backoff)
		}
		t.NomadRetry = r
	}
	for _, fn := range t.FunctionDenylist {
		if err := (template.ClientConfig{FunctionDenylist: []string{fn}}).Validate(); err != nil {
			d.errorf(b.attr("function_denylist").Expr.Range(), "%v", err)
		}
	}
	return t
}

// merge layers the fields b sets over a; a nil a yields a copy of b.
func (a *TemplateConfig) merge(b *TemplateConfig) *TemplateConfig {
	if b == nil {
		return a
	}
	out := &TemplateConfig{}
	if a != nil {
		*out = *a
	}
	if b.FunctionDenylist != nil {
		out.FunctionDenylist = slices.Clone(b.FunctionDenylist)
	}
	mergePtr(&out.DisableFileSandbox, b.DisableFileSandbox)
	mergePtr(&out.MaxStale, b.MaxStale)
	mergePtr(&out.BlockQueryWait, b.BlockQueryWait)
	out.Wait = out.Wait.merge(b.Wait)
	out.WaitBounds = out.WaitBounds.merge(b.WaitBounds)
	if b.NomadRetry != nil {
		r := &RetryConfig{}
		if out.NomadRetry != nil {
			*r = *out.NomadRetry
		}
		mergePtr(&r.Backoff, b.NomadRetry.Backoff)
		mergePtr(&r.MaxBackoff, b.NomadRetry.MaxBackoff)
		out.NomadRetry = r
	}
	return out
}

func (a *WaitConfig) merge(b *WaitConfig) *WaitConfig {
	if b == nil {
		return a
	}
	out := &WaitConfig{}
	if a != nil {
		*out = *a
	}
	mergePtr(&out.Min, b.Min)
	mergePtr(&out.Max, b.Max)
	return out
}

func (a *WaitConfig) wait() *structs.TemplateWait {
	if a == nil {
		return nil
	}
	w := &structs.TemplateWait{}
	if a.Min != nil {
		w.Min = *a.Min
	}
	if a.Max != nil {
		w.Max = *a.Max
	}
	return w
}

// clientConfig is the block in the client's terms, upstream's defaults
// for what it leaves unset.
func (a *TemplateConfig) clientConfig() *template.ClientConfig {
	out := template.DefaultClientConfig()
	if a == nil {
		return &out
	}
	if a.FunctionDenylist != nil {
		out.FunctionDenylist = slices.Clone(a.FunctionDenylist)
	}
	if a.DisableFileSandbox != nil {
		out.DisableFileSandbox = *a.DisableFileSandbox
	}
	if a.MaxStale != nil {
		out.MaxStale = *a.MaxStale
	}
	if a.BlockQueryWait != nil {
		out.BlockQueryWait = *a.BlockQueryWait
	}
	out.Wait, out.WaitBounds = a.Wait.wait(), a.WaitBounds.wait()
	if r := a.NomadRetry; r != nil {
		if r.Backoff != nil {
			out.RetryBackoff = *r.Backoff
		}
		if r.MaxBackoff != nil {
			out.RetryMaxBackoff = *r.MaxBackoff
		}
	}
	return &out
}
