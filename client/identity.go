package client

import (
	"fmt"

	"github.com/nomad-edge/nomad/client/allocrunner"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// methodSignIdentities is the RPC that signs workload identities.
const methodSignIdentities = "Alloc.SignIdentities"

// identitySigner has the servers sign the workload identities of tasks
// on this node, with the node's secret; the task runners' identity
// hooks call it and retry its errors.
type identitySigner struct{ c *Client }

var _ allocrunner.IdentitySigner = identitySigner{}

// SignIdentity signs the identity name ("" for the default one) of task
// in allocation allocID.
func (s identitySigner) SignIdentity(allocID, task, name string) (*structs.SignedWorkloadIdentity, error) {
	req := &structs.AllocIdentitiesRequest{
		Identities:   []*structs.WorkloadIdentityRequest{{AllocID: allocID, TaskName: task, IdentityName: name}},
		QueryOptions: structs.QueryOptions{Region: s.c.cfg.Region, AuthToken: s.c.secretID()},
	}
	var resp structs.AllocIdentitiesResponse
	if err := s.c.rpc(methodSignIdentities, req, &resp); err != nil {
		return nil, err
	}
	if len(resp.Rejections) > 0 {
		return nil, fmt.Errorf("servers refused the identity of task %q: %s", task, resp.Rejections[0].Reason)
	}
	if len(resp.SignedIdentities) != 1 {
		return nil, fmt.Errorf("servers signed %d identities for task %q, expected 1", len(resp.SignedIdentities), task)
	}
	return resp.SignedIdentities[0], nil
}
