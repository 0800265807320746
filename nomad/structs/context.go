package structs

import "context"

// A request's context rides on the request itself, in QueryOptions or
// WriteRequest, so that every layer it passes (the HTTP handler, the
// in-process call, the connection pool, a forward to the leader, a
// blocking query) can stop when its caller has gone. It is never encoded:
// an RPC carries the context of the connection it arrived on instead.

// Context returns the caller's context, or context.Background.
func (q *QueryOptions) Context() context.Context {
	if q.ctx == nil {
		return context.Background()
	}
	return q.ctx
}

// SetContext sets the caller's context.
func (q *QueryOptions) SetContext(ctx context.Context) { q.ctx = ctx }

// Context returns the caller's context, or context.Background.
func (w *WriteRequest) Context() context.Context {
	if w.ctx == nil {
		return context.Background()
	}
	return w.ctx
}

// SetContext sets the caller's context.
func (w *WriteRequest) SetContext(ctx context.Context) { w.ctx = ctx }

// Contexter is a request that carries its caller's context.
type Contexter interface {
	Context() context.Context
	SetContext(context.Context)
}

// RequestContext returns the context carried by args, or
// context.Background for requests that carry none.
func RequestContext(args any) context.Context {
	if c, ok := args.(Contexter); ok {
		return c.Context()
	}
	return context.Background()
}

// WithRequestContext sets ctx on args when args can carry one.
func WithRequestContext(args any, ctx context.Context) {
	if c, ok := args.(Contexter); ok {
		c.SetContext(ctx)
	}
}

// SetAuthToken sets the caller's secret.
func (q *QueryOptions) SetAuthToken(token string) { q.AuthToken = token }

// SetAuthToken sets the caller's secret.
func (w *WriteRequest) SetAuthToken(token string) { w.AuthToken = token }

// AuthTokenSetter is a request that carries its caller's secret.
type AuthTokenSetter interface {
	SetAuthToken(string)
}

// QueryOpts returns the options themselves, so that code handling any
// request that embeds QueryOptions can reach them (Queryer).
func (q *QueryOptions) QueryOpts() *QueryOptions { return q }

// QueryMetadata returns the metadata itself, so that code handling any
// response that embeds QueryMeta can fill it in (QueryReplier).
func (m *QueryMeta) QueryMetadata() *QueryMeta { return m }

// Queryer is a read request.
type Queryer interface {
	QueryOpts() *QueryOptions
}

// QueryReplier is the response to a read request.
type QueryReplier interface {
	QueryMetadata() *QueryMeta
}
