package client

import (
	"context"

	"github.com/nomad-edge/nomad/client/allocrunner"
	"github.com/nomad-edge/nomad/client/template"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// templateSources gives each task's templates a Source over the
// servers' RPCs, read with the task's workload identity.
type templateSources struct{ c *Client }

var _ allocrunner.TemplateSources = templateSources{}

// Source implements allocrunner.TemplateSources.
func (s templateSources) Source(namespace string, token func() string) template.Source {
	return &rpcSource{c: s.c, ns: namespace, token: token}
}

// Config implements allocrunner.TemplateSources.
func (s templateSources) Config() template.ClientConfig {
	if s.c.cfg.Template == nil {
		return template.DefaultClientConfig()
	}
	return *s.c.cfg.Template
}

// rpcSource reads variables and services through the client's RPC, as
// blocking queries when asked for a minimum index.
type rpcSource struct {
	c     *Client
	ns    string
	token func() string
}

// opts are a read's options: with the client's max_stale, any server
// may answer (0: the leader only), and a blocking query waits at most
// block_query_wait.
func (s *rpcSource) opts(minIndex uint64) structs.QueryOptions {
	cfg := templateSources{s.c}.Config()
	q := structs.QueryOptions{Region: s.c.cfg.Region, Namespace: s.ns, MinQueryIndex: minIndex, AuthToken: s.token(),
		AllowStale: cfg.MaxStale > 0}
	if minIndex > 0 {
		q.MaxQueryTime = cfg.BlockQueryWait
	}
	return q
}

// query makes one read. An answer from a server further behind the
// leader than max_stale is refused and the read made again of the leader.
func (s *rpcSource) query(ctx context.Context, method string, q *structs.QueryOptions, req any, meta *structs.QueryMeta, resp any) error {
	err := s.c.call(ctx, method, req, resp)
	limit := templateSources{s.c}.Config().MaxStale
	if err == nil && q.AllowStale && meta.LastContact > limit {
		q.AllowStale = false
		err = s.c.call(ctx, method, req, resp)
	}
	return err
}

// Var implements template.Source (Variables.Read).
func (s *rpcSource) Var(ctx context.Context, path string, minIndex uint64) (*structs.VariableDecrypted, uint64, error) {
	req := &structs.VariablesReadRequest{Path: path, QueryOptions: s.opts(minIndex)}
	var resp structs.VariablesReadResponse
	err := s.query(ctx, "Variables.Read", &req.QueryOptions, req, &resp.QueryMeta, &resp)
	return resp.Data, resp.Index, err
}

// VarList implements template.Source (Variables.List).
func (s *rpcSource) VarList(ctx context.Context, prefix string, minIndex uint64) ([]*structs.VariableMetadata, uint64, error) {
	req := &structs.VariablesListRequest{QueryOptions: s.opts(minIndex)}
	req.Prefix = prefix
	var resp structs.VariablesListResponse
	err := s.query(ctx, "Variables.List", &req.QueryOptions, req, &resp.QueryMeta, &resp)
	return resp.Data, resp.Index, err
}

// Service implements template.Source (ServiceRegistration.GetService).
func (s *rpcSource) Service(ctx context.Context, name string, minIndex uint64) ([]*structs.ServiceRegistration, uint64, error) {
	req := &structs.ServiceRegistrationByNameRequest{ServiceName: name, QueryOptions: s.opts(minIndex)}
	var resp structs.ServiceRegistrationByNameResponse
	err := s.query(ctx, "ServiceRegistration.GetService", &req.QueryOptions, req, &resp.QueryMeta, &resp)
	return resp.Services, resp.Index, err
}

// Services implements template.Source (ServiceRegistration.List, the
// task's namespace).
func (s *rpcSource) Services(ctx context.Context, minIndex uint64) ([]*structs.ServiceRegistrationStub, uint64, error) {
	req := &structs.ServiceRegistrationListRequest{QueryOptions: s.opts(minIndex)}
	var resp structs.ServiceRegistrationListResponse
	err := s.query(ctx, "ServiceRegistration.List", &req.QueryOptions, req, &resp.QueryMeta, &resp)
	var out []*structs.ServiceRegistrationStub
	for _, ns := range resp.Services {
		if ns.Namespace == s.ns {
			out = append(out, ns.Services...)
		}
	}
	return out, resp.Index, err
}
