package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"
)

// DefaultAddress is the agent address used when neither Config.Address nor
// the NOMAD_ADDR environment variable says otherwise; it is upstream's
// default HTTP port on loopback, so a local `-dev` agent just works.
const DefaultAddress = "http://127.0.0.1:4646"

// Environment variables read by DefaultConfig. They are upstream's names, so
// an operator's shell profile keeps working.
const (
	EnvAddress   = "NOMAD_ADDR"
	EnvRegion    = "NOMAD_REGION"
	EnvNamespace = "NOMAD_NAMESPACE"
	EnvToken     = "NOMAD_TOKEN"
)

// Header names of the blocking-query protocol.
const (
	// HeaderIndex carries the state-store index the answer reflects. Passing
	// it back as QueryOptions.WaitIndex turns the next read into a blocking
	// query that returns once the index moves past it.
	HeaderIndex = "X-Nomad-Index"
	// HeaderKnownLeader is "true" when the answering server knew a leader.
	HeaderKnownLeader = "X-Nomad-KnownLeader"
	// HeaderLastContact is the milliseconds since the answering server last
	// heard from the leader; large values mean a possibly stale read.
	HeaderLastContact = "X-Nomad-LastContact"
	// HeaderToken carries the caller's ACL secret.
	HeaderToken = "X-Nomad-Token"
)

// maxErrorBody caps how much of a non-2xx body is kept in an error, so a
// misbehaving proxy cannot make the CLI buffer megabytes of HTML.
const maxErrorBody = 64 << 10

// Config configures a Client.
type Config struct {
	// Address is the agent's base URL, e.g. "http://127.0.0.1:4646".
	Address string

	// Region and Namespace are applied to every request whose options do not
	// name their own; empty means "let the agent decide".
	Region    string
	Namespace string

	// HttpClient performs the requests. It must not have a short Timeout:
	// blocking queries legitimately hold a request open for minutes. Nil
	// means a client built on a clone of http.DefaultTransport.
	HttpClient *http.Client

	// TLSConfig is for agents serving HTTPS; nil takes DefaultConfig's,
	// read from NOMAD_CACERT, NOMAD_CLIENT_CERT and the like.
	TLSConfig *TLSConfig

	// SecretID is the ACL token sent with every request whose options
	// carry none (NOMAD_TOKEN by default).
	SecretID string
}

// DefaultConfig returns a Config filled from the environment (NOMAD_ADDR,
// NOMAD_REGION, NOMAD_NAMESPACE and the TLS variables), falling back to
// DefaultAddress.
func DefaultConfig() *Config {
	c := &Config{Address: DefaultAddress, TLSConfig: tlsConfigFromEnv()}
	if v := os.Getenv(EnvAddress); v != "" {
		c.Address = v
	}
	c.Region = os.Getenv(EnvRegion)
	c.Namespace = os.Getenv(EnvNamespace)
	c.SecretID = os.Getenv(EnvToken)
	return c
}

// Client talks to one agent's /v1 HTTP API. It is safe for concurrent use.
type Client struct {
	base       *url.URL
	region     string
	namespace  string
	secretID   string
	httpClient *http.Client
}

// sharedTransport carries the requests of every client built without an
// HTTP client or TLS settings of its own.
var sharedTransport = http.DefaultTransport.(*http.Transport).Clone()

// NewClient returns a Client for cfg. A nil cfg, or empty fields in it, take
// the values of DefaultConfig, so NewClient(nil) honours NOMAD_ADDR.
func NewClient(cfg *Config) (*Client, error) {
	def := DefaultConfig()
	if cfg == nil {
		cfg = def
	}
	addr := cfg.Address
	if addr == "" {
		addr = def.Address
	}
	base, err := url.Parse(addr)
	if err != nil {
		return nil, fmt.Errorf("invalid agent address %q: %w", addr, err)
	}
	if base.Scheme != "http" && base.Scheme != "https" {
		return nil, fmt.Errorf("invalid agent address %q: scheme must be http or https", addr)
	}
	if base.Host == "" {
		return nil, fmt.Errorf("invalid agent address %q: missing host", addr)
	}
	tlsCfg := cfg.TLSConfig
	if tlsCfg == nil {
		tlsCfg = def.TLSConfig
	}
	hc := cfg.HttpClient
	switch {
	case hc != nil:
	case tlsCfg.empty():
		// Clients without TLS settings share one pool of connections: a
		// program that makes a client per call (as a CLI command does)
		// reuses idle connections instead of leaving one more open per
		// client, which an agent's per-address connection limit counts.
		hc = &http.Client{Transport: sharedTransport}
	default:
		hc = &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
	}
	if err := configureTLS(hc, tlsCfg); err != nil {
		return nil, fmt.Errorf("TLS: %w", err)
	}
	return &Client{
		base:       base,
		region:     cfg.Region,
		namespace:  cfg.Namespace,
		secretID:   cfg.SecretID,
		httpClient: hc,
	}, nil
}

// Address returns the agent base URL the client talks to.
func (c *Client) Address() string { return c.base.String() }

// QueryOptions tune a read.
type QueryOptions struct {
	// Region and Namespace override the client's defaults for this request.
	Region    string
	Namespace string

	// Prefix filters list endpoints to IDs starting with it.
	Prefix string

	// AllowStale lets any server answer from its own state instead of
	// asking the leader: faster, and possible without a leader, but it may
	// lag by QueryMeta.LastContact.
	AllowStale bool

	// WaitIndex, when non-zero, makes the read a blocking query: the agent
	// answers once its index for the data exceeds WaitIndex, or when
	// WaitTime (agent default if zero) has passed.
	WaitIndex uint64
	WaitTime  time.Duration

	// AuthToken, when set, is the ACL secret of this request instead of
	// the client's.
	AuthToken string

	// Filter is a go-bexpr expression over a list's entries; PerPage,
	// NextToken and Reverse page the list (QueryMeta.NextToken starts the
	// next page).
	Filter    string
	PerPage   int32
	NextToken string
	Reverse   bool

	// Params are extra query parameters, set after the ones above so that a
	// caller can reach endpoint options this client has no field for.
	Params map[string]string

	ctx context.Context
}

// WithContext returns a copy of o whose request is bound to ctx, so that a
// blocking query can be abandoned (for example on Ctrl-C in the CLI).
func (o *QueryOptions) WithContext(ctx context.Context) *QueryOptions {
	var c QueryOptions
	if o != nil {
		c = *o
	}
	c.ctx = ctx
	return &c
}

// Context returns the context bound by WithContext, or context.Background.
func (o *QueryOptions) Context() context.Context {
	if o == nil || o.ctx == nil {
		return context.Background()
	}
	return o.ctx
}

// WriteOptions tune a write.
type WriteOptions struct {
	Region    string
	Namespace string
	// AuthToken, when set, is the ACL secret of this request instead of
	// the client's.
	AuthToken string

	ctx context.Context
}

// WithContext returns a copy of o whose request is bound to ctx.
func (o *WriteOptions) WithContext(ctx context.Context) *WriteOptions {
	var c WriteOptions
	if o != nil {
		c = *o
	}
	c.ctx = ctx
	return &c
}

// Context returns the context bound by WithContext, or context.Background.
func (o *WriteOptions) Context() context.Context {
	if o == nil || o.ctx == nil {
		return context.Background()
	}
	return o.ctx
}

// QueryMeta describes how a read was answered.
type QueryMeta struct {
	// LastIndex is X-Nomad-Index: pass it as the next WaitIndex to block
	// until something changes.
	LastIndex uint64

	// LastContact is how long ago the answering server heard from the
	// leader, and KnownLeader whether it knew one at all.
	LastContact time.Duration
	KnownLeader bool

	// RequestTime is the round-trip time observed by the client.
	RequestTime time.Duration

	// NextToken is X-Nomad-NextToken: where the next page of a paged list
	// starts, empty on the last page.
	NextToken string
}

// WriteMeta describes how a write was answered.
type WriteMeta struct {
	// LastIndex is the raft index at which the write was applied.
	LastIndex uint64

	// RequestTime is the round-trip time observed by the client.
	RequestTime time.Duration
}

// WriteRequest is embedded in request bodies, as upstream does, so a body
// says which region and namespace it targets even when relayed.
type WriteRequest struct {
	Region    string
	Namespace string
}

// request is one HTTP exchange under construction.
type request struct {
	method string
	path   string
	params url.Values
	body   any
	// rawBody, when set, is sent as it is instead of body's JSON.
	rawBody io.Reader
	token   string
	ctx     context.Context
}

// newRequest starts a request for path (which may carry its own query
// string, e.g. "?purge=true") with the client's default region and namespace.
func (c *Client) newRequest(method, path string) (*request, error) {
	r := &request{method: method, params: url.Values{}, token: c.secretID, ctx: context.Background()}
	p, q, _ := strings.Cut(path, "?")
	r.path = p
	if q != "" {
		vals, err := url.ParseQuery(q)
		if err != nil {
			return nil, fmt.Errorf("invalid query in %q: %w", path, err)
		}
		r.params = vals
	}
	if c.region != "" {
		r.params.Set("region", c.region)
	}
	if c.namespace != "" {
		r.params.Set("namespace", c.namespace)
	}
	return r, nil
}

func (r *request) applyQuery(q *QueryOptions) {
	if q == nil {
		return
	}
	if q.Region != "" {
		r.params.Set("region", q.Region)
	}
	if q.Namespace != "" {
		r.params.Set("namespace", q.Namespace)
	}
	if q.Prefix != "" {
		r.params.Set("prefix", q.Prefix)
	}
	if q.AllowStale {
		r.params.Set("stale", "")
	}
	if q.WaitIndex != 0 {
		r.params.Set("index", strconv.FormatUint(q.WaitIndex, 10))
	}
	if q.WaitTime != 0 {
		// Milliseconds with a unit, as upstream sends; the agent accepts any
		// Go duration string here.
		r.params.Set("wait", strconv.FormatInt(q.WaitTime.Milliseconds(), 10)+"ms")
	}
	if q.Filter != "" {
		r.params.Set("filter", q.Filter)
	}
	if q.PerPage != 0 {
		r.params.Set("per_page", strconv.Itoa(int(q.PerPage)))
	}
	if q.NextToken != "" {
		r.params.Set("next_token", q.NextToken)
	}
	if q.Reverse {
		r.params.Set("reverse", "true")
	}
	for k, v := range q.Params {
		r.params.Set(k, v)
	}
	if q.AuthToken != "" {
		r.token = q.AuthToken
	}
	r.ctx = q.Context()
}

func (r *request) applyWrite(w *WriteOptions) {
	if w == nil {
		return
	}
	if w.Region != "" {
		r.params.Set("region", w.Region)
	}
	if w.Namespace != "" {
		r.params.Set("namespace", w.Namespace)
	}
	if w.AuthToken != "" {
		r.token = w.AuthToken
	}
	r.ctx = w.Context()
}

// do performs r and returns the response when its status is 2xx; any other
// status is turned into an *UnexpectedResponseError and the body closed.
func (c *Client) do(r *request) (*http.Response, time.Duration, error) {
	// r.path is already escaped (IDs may contain "/"); keep that escaping
	// by giving the URL both forms instead of letting it re-escape "%".
	u := *c.base
	raw := strings.TrimSuffix(u.EscapedPath(), "/") + r.path
	unescaped, err := url.PathUnescape(raw)
	if err != nil {
		return nil, 0, fmt.Errorf("invalid request path %q: %w", raw, err)
	}
	u.Path, u.RawPath = unescaped, raw
	u.RawQuery = r.params.Encode()

	var body io.Reader
	if r.body != nil {
		buf, err := json.Marshal(r.body)
		if err != nil {
			return nil, 0, fmt.Errorf("encoding %s %s request: %w", r.method, r.path, err)
		}
		body = bytes.NewReader(buf)
	}
	contentType := "application/json"
	if r.rawBody != nil {
		body, contentType = r.rawBody, "application/octet-stream"
	}
	req, err := http.NewRequestWithContext(r.ctx, r.method, u.String(), body)
	if err != nil {
		return nil, 0, err
	}
	if body != nil {
		req.Header.Set("Content-Type", contentType)
	}
	if r.token != "" {
		req.Header.Set(HeaderToken, r.token)
	}

	start := time.Now()
	resp, err := c.httpClient.Do(req)
	rtt := time.Since(start)
	if err != nil {
		return nil, rtt, err
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		return nil, rtt, &UnexpectedResponseError{
			StatusCode: resp.StatusCode,
			Body:       strings.TrimSpace(string(b)),
			Method:     r.method,
			Path:       r.path,
		}
	}
	return resp, rtt, nil
}

// query performs a GET of path, decodes the body into out and returns the
// blocking-query metadata.
func (c *Client) query(path string, out any, q *QueryOptions) (*QueryMeta, error) {
	r, err := c.newRequest(http.MethodGet, path)
	if err != nil {
		return nil, err
	}
	r.applyQuery(q)
	resp, rtt, err := c.do(r)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()

	qm := &QueryMeta{RequestTime: rtt}
	if err := parseQueryMeta(resp.Header, qm); err != nil {
		return nil, err
	}
	if err := decodeBody(resp.Body, out); err != nil {
		return nil, fmt.Errorf("decoding %s response: %w", r.path, err)
	}
	return qm, nil
}

// write performs a PUT, POST or DELETE of path with in as its JSON body (nil
// for none) and decodes the answer into out (nil to discard it).
func (c *Client) write(method, path string, in, out any, w *WriteOptions) (*WriteMeta, error) {
	r, err := c.newRequest(method, path)
	if err != nil {
		return nil, err
	}
	r.applyWrite(w)
	r.body = in
	resp, rtt, err := c.do(r)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()

	wm := &WriteMeta{RequestTime: rtt}
	idx, err := parseIndex(resp.Header)
	if err != nil {
		return nil, err
	}
	wm.LastIndex = idx
	if out == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		return wm, nil
	}
	if err := decodeBody(resp.Body, out); err != nil {
		return nil, fmt.Errorf("decoding %s response: %w", r.path, err)
	}
	return wm, nil
}

// parseIndex reads X-Nomad-Index. Endpoints that are not backed by the
// state store (e.g. /v1/status/leader) send none, which reads as 0; a header
// that is present but not a number is a protocol error worth surfacing.
func parseIndex(h http.Header) (uint64, error) {
	v := h.Get(HeaderIndex)
	if v == "" {
		return 0, nil
	}
	idx, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("invalid %s header %q: %w", HeaderIndex, v, err)
	}
	return idx, nil
}

func parseQueryMeta(h http.Header, qm *QueryMeta) error {
	idx, err := parseIndex(h)
	if err != nil {
		return err
	}
	qm.LastIndex = idx
	if v := h.Get(HeaderLastContact); v != "" {
		ms, err := strconv.ParseUint(v, 10, 63)
		if err != nil {
			return fmt.Errorf("invalid %s header %q: %w", HeaderLastContact, v, err)
		}
		qm.LastContact = time.Duration(ms) * time.Millisecond
	}
	qm.KnownLeader = h.Get(HeaderKnownLeader) == "true"
	qm.NextToken = h.Get("X-Nomad-NextToken")
	return nil
}

// errEmptyBody reports a 2xx answer without the body the endpoint promises.
var errEmptyBody = errors.New("empty response body")

func decodeBody(body io.Reader, out any) error {
	err := json.NewDecoder(body).Decode(out)
	if errors.Is(err, io.EOF) {
		return errEmptyBody
	}
	return err
}

// pathID escapes an ID for use as one path segment. Job IDs may contain "/"
// (child jobs of periodic and parameterized jobs do), which must not split
// the path.
func pathID(id string) string { return url.PathEscape(id) }
