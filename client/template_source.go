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

// rpcSource reads variables and services through the client's RPC, as
// blocking queries when asked for a minimum index.
type rpcSource struct {
	c     *Client
	ns    string
	token func() string
}

func (s *rpcSource) opts(minIndex uint64) structs.QueryOptions {
	return structs.QueryOptions{Region: s.c.cfg.Region, Namespace: s.ns, MinQueryIndex: minIndex, AuthToken: s.token(), AllowStale: true}
}

// Var implements template.Source (Variables.Read).
func (s *rpcSource) Var(ctx context.Context, path string, minIndex uint64) (*structs.VariableDecrypted, uint64, error) {
	req := &structs.VariablesReadRequest{Path: path, QueryOptions: s.opts(minIndex)}
	var resp structs.VariablesReadResponse
	err := s.c.call(ctx, "Variables.Read", req, &resp)
	return resp.Data, resp.Index, err
}

// VarList implements template.Source (Variables.List).
func (s *rpcSource) VarList(ctx context.Context, prefix string, minIndex uint64) ([]*structs.VariableMetadata, uint64, error) {
	req := &structs.VariablesListRequest{QueryOptions: s.opts(minIndex)}
	req.Prefix = prefix
	var resp structs.VariablesListResponse
	err := s.c.call(ctx, "Variables.List", req, &resp)
	return resp.Data, resp.Index, err
}

// Service implements template.Source (ServiceRegistration.GetService).
func (s *rpcSource) Service(ctx context.Context, name string, minIndex uint64) ([]*structs.ServiceRegistration, uint64, error) {
	req := &structs.ServiceRegistrationByNameRequest{ServiceName: name, QueryOptions: s.opts(minIndex)}
	var resp structs.ServiceRegistrationByNameResponse
	err := s.c.call(ctx, "ServiceRegistration.GetService", req, &resp)
	return resp.Services, resp.Index, err
}

// Services implements template.Source (ServiceRegistration.List, the
// task's namespace).
func (s *rpcSource) Services(ctx context.Context, minIndex uint64) ([]*structs.ServiceRegistrationStub, uint64, error) {
	req := &structs.ServiceRegistrationListRequest{QueryOptions: s.opts(minIndex)}
	var resp structs.ServiceRegistrationListResponse
	err := s.c.call(ctx, "ServiceRegistration.List", req, &resp)
	var out []*structs.ServiceRegistrationStub
	for _, ns := range resp.Services {
		if ns.Namespace == s.ns {
			out = append(out, ns.Services...)
		}
	}
	return out, resp.Index, err
}
