package agent

import (
	"time"

	"github.com/hashicorp/hcl/v2"

	"github.com/nomad-edge/nomad/nomad"
)

// Upstream's defaults for the limits block, HTTP side; the RPC side's are
// the server's own.
const (
	DefaultHTTPSHandshakeTimeout = 5 * time.Second
	DefaultHTTPMaxConnsPerClient = 100
)

// Limits is the `limits` block: what one client IP may hold open on the
// HTTP and RPC ports, and how long a new connection may take to finish
// its TLS (or, on RPC, its first-byte) handshake. 0 disables a limit, so
// the fields are pointers: a file setting 0 must win over the default when
// merged. Loopback is an IP like any other, as upstream.
type Limits struct {
	HTTPSHandshakeTimeout *time.Duration
	HTTPMaxConnsPerClient *int
	RPCHandshakeTimeout   *time.Duration
	RPCMaxConnsPerClient  *int
}

func defaultLimits() *Limits {
	return &Limits{
		HTTPSHandshakeTimeout: ptr(DefaultHTTPSHandshakeTimeout),
		HTTPMaxConnsPerClient: ptr(DefaultHTTPMaxConnsPerClient),
		RPCHandshakeTimeout:   ptr(nomad.DefaultRPCHandshakeTimeout),
		RPCMaxConnsPerClient:  ptr(nomad.DefaultRPCMaxConnsPerClient),
	}
}

func ptr[T any](v T) *T { return &v }

// copy returns a Limits sharing nothing with l; never nil.
func (l *Limits) copy() *Limits {
	out := &Limits{}
	if l == nil {
		return out
	}
	out.merge(l)
	return out
}

// merge layers the fields b sets over o.
func (o *Limits) merge(b *Limits) {
	if b == nil {
		return
	}
	mergePtr(&o.HTTPSHandshakeTimeout, b.HTTPSHandshakeTimeout)
	mergePtr(&o.HTTPMaxConnsPerClient, b.HTTPMaxConnsPerClient)
	mergePtr(&o.RPCHandshakeTimeout, b.RPCHandshakeTimeout)
	mergePtr(&o.RPCMaxConnsPerClient, b.RPCMaxConnsPerClient)
}

func mergePtr[T any](dst **T, v *T) {
	if v != nil {
		*dst = ptr(*v)
	}
}

// connLimits are the limits in effect: what the config sets, upstream's
// defaults for what it leaves unset.
type connLimits struct {
	HTTPSHandshakeTimeout time.Duration
	HTTPMaxConnsPerClient int
	RPCHandshakeTimeout   time.Duration
	RPCMaxConnsPerClient  int
}

func (c *Config) connLimits() connLimits {
	l := defaultLimits()
	l.merge(c.Limits)
	return connLimits{
		HTTPSHandshakeTimeout: *l.HTTPSHandshakeTimeout,
		HTTPMaxConnsPerClient: *l.HTTPMaxConnsPerClient,
		RPCHandshakeTimeout:   *l.RPCHandshakeTimeout,
		RPCMaxConnsPerClient:  *l.RPCMaxConnsPerClient,
	}
}

// limits decodes the limits block. Negative values are refused; 0 turns a
// limit off.
func (d *configDecoder) limits(body hcl.Body) *Limits {
	lb := d.open(body, "limits.", bodySpec{attrs: []string{
		"https_handshake_timeout", "http_max_conns_per_client",
		"rpc_handshake_timeout", "rpc_max_conns_per_client",
	}})
	l := &Limits{}
	lb.optDuration("https_handshake_timeout", &l.HTTPSHandshakeTimeout)
	lb.optInt("http_max_conns_per_client", &l.HTTPMaxConnsPerClient)
	lb.optDuration("rpc_handshake_timeout", &l.RPCHandshakeTimeout)
	lb.optInt("rpc_max_conns_per_client", &l.RPCMaxConnsPerClient)
	return l
}

// optDuration reads a duration into *dst only when the key is present.
func (b *block) optDuration(name string, dst **time.Duration) {
	if b.attr(name) == nil {
		return
	}
	var v time.Duration = -1
	b.duration(name, &v)
	if v >= 0 {
		*dst = &v
	}
}

// optInt reads a non-negative whole number into *dst only when present.
func (b *block) optInt(name string, dst **int) {
	var v int
	if b.integer(name, &v, 0, 1<<31-1) {
		*dst = &v
	}
}
