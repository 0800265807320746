package api

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// RawRequest is a request sent as given, for `nomad operator api`.
type RawRequest struct {
	Method string
	// Path is the API path with its query, e.g. "/v1/jobs?prefix=web".
	Path   string
	Body   io.Reader
	Header http.Header
}

// RawURL returns the URL RawRequest with path reaches: the client's
// region and namespace are added unless the path's query names them.
func (c *Client) RawURL(path string) (*url.URL, error) {
	p, q, _ := strings.Cut(path, "?")
	if !strings.HasPrefix(p, "/") {
		return nil, fmt.Errorf("invalid path %q: it must start with /", path)
	}
	vals, err := url.ParseQuery(q)
	if err != nil {
		return nil, fmt.Errorf("invalid query in %q: %w", path, err)
	}
	if c.region != "" && !vals.Has("region") {
		vals.Set("region", c.region)
	}
	if c.namespace != "" && !vals.Has("namespace") {
		vals.Set("namespace", c.namespace)
	}
	u := *c.base
	u.Path = strings.TrimSuffix(u.Path, "/") + p
	u.RawQuery = vals.Encode()
	return &u, nil
}

// Raw sends req with the client's TLS settings and token (unless req's
// headers carry one) and returns the response whatever its status; the
// caller reads and closes its body, which may be a stream.
func (c *Client) Raw(ctx context.Context, req RawRequest) (*http.Response, error) {
	u, err := c.RawURL(req.Path)
	if err != nil {
		return nil, err
	}
	hr, err := http.NewRequestWithContext(ctx, req.Method, u.String(), req.Body)
	if err != nil {
		return nil, err
	}
	for k, vs := range req.Header {
		for _, v := range vs {
			hr.Header.Add(k, v)
		}
	}
	if c.secretID != "" && hr.Header.Get(HeaderToken) == "" {
		hr.Header.Set(HeaderToken, c.secretID)
	}
	return c.httpClient.Do(hr)
}
