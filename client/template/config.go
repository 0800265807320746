package template

import (
	"fmt"
	"slices"
	"time"
	"unicode"

	"github.com/nomad-edge/nomad/nomad/structs"
)

// ClientConfig is the client agent's `template` block: what a node's
// operator decides for every template it renders.
type ClientConfig struct {
	// FunctionDenylist are functions no template may call; a call fails
	// the render naming the function and the setting.
	FunctionDenylist []string
	// DisableFileSandbox lets file read anywhere the client may, instead
	// of inside the task's directory only.
	DisableFileSandbox bool
	// MaxStale bounds how far behind the leader a server answering a
	// read may be; 0 asks the leader (consistent reads).
	MaxStale time.Duration
	// BlockQueryWait is how long one blocking query waits for a change
	// before it is asked again; 0 leaves the servers' default.
	BlockQueryWait time.Duration
	// Wait is the wait { min max } of templates that have none.
	Wait *structs.TemplateWait
	// WaitBounds clamps every template's wait (WaitBounds.Max 0: no
	// upper bound).
	WaitBounds *structs.TemplateWait
	// RetryBackoff and RetryMaxBackoff are the delays of a template
	// whose reads fail (servers out of reach): doubling from the first
	// to the second, the rendered content staying meanwhile.
	RetryBackoff, RetryMaxBackoff time.Duration
}

// Upstream's defaults.
const (
	DefaultMaxStale        = 87600 * time.Hour
	DefaultBlockQueryWait  = 5 * time.Minute
	DefaultRetryBackoff    = 250 * time.Millisecond
	DefaultRetryMaxBackoff = time.Minute
)

// DefaultFunctionDenylist is upstream's default function_denylist.
var DefaultFunctionDenylist = []string{"plugin", "writeToFile"}

// DefaultClientConfig is upstream's client template block left unset.
func DefaultClientConfig() ClientConfig {
	return ClientConfig{
		FunctionDenylist: slices.Clone(DefaultFunctionDenylist),
		MaxStale:         DefaultMaxStale, BlockQueryWait: DefaultBlockQueryWait,
		RetryBackoff: DefaultRetryBackoff, RetryMaxBackoff: DefaultRetryMaxBackoff,
	}
}

// Validate checks the values; its problems name the setting.
func (c ClientConfig) Validate() error {
	for name, d := range map[string]time.Duration{"max_stale": c.MaxStale, "block_query_wait": c.BlockQueryWait,
		"nomad_retry.backoff": c.RetryBackoff, "nomad_retry.max_backoff": c.RetryMaxBackoff} {
		if d < 0 {
			return fmt.Errorf("client.template.%s must not be negative", name)
		}
	}
	if c.RetryMaxBackoff > 0 && c.RetryMaxBackoff < c.RetryBackoff {
		return fmt.Errorf("client.template.nomad_retry.max_backoff (%s) must not be below backoff (%s)", c.RetryMaxBackoff, c.RetryBackoff)
	}
	for _, fn := range c.FunctionDenylist {
		if !isIdent(fn) {
			return fmt.Errorf("client.template.function_denylist: %q is not a function name", fn)
		}
	}
	for name, w := range map[string]*structs.TemplateWait{"wait": c.Wait, "wait_bounds": c.WaitBounds} {
		if w != nil && (w.Min < 0 || w.Max < 0 || (w.Max > 0 && w.Max < w.Min)) {
			return fmt.Errorf("client.template.%s must have 0 <= min <= max", name)
		}
	}
	return nil
}

// WaitFor is the wait a template renders with: its own, or the client's
// default, clamped to the client's bounds.
func (c ClientConfig) WaitFor(own *structs.TemplateWait) structs.TemplateWait {
	var w structs.TemplateWait
	switch {
	case own != nil:
		w = *own
	case c.Wait != nil:
		w = *c.Wait
	}
	if b := c.WaitBounds; b != nil {
		w.Min = max(w.Min, b.Min)
		w.Max = max(w.Max, b.Min)
		if b.Max > 0 {
			w.Min, w.Max = min(w.Min, b.Max), min(w.Max, b.Max)
			if w.Max == 0 {
				w.Max = b.Max
			}
		}
	}
	return w
}

// isIdent reports whether s can name a template function.
func isIdent(s string) bool {
	for i, r := range s {
		if r != '_' && !unicode.IsLetter(r) && (i == 0 || !unicode.IsDigit(r)) {
			return false
		}
	}
	return s != ""
}
