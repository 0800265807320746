package client

import (
	"github.com/nomad-edge/nomad/client/allocrunner"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// RPC methods of the service catalog.
const (
	methodServiceUpsert = "ServiceRegistration.Upsert"
	methodServiceDelete = "ServiceRegistration.DeleteByID"
)

// serviceRegistrar writes the client's allocations' instances to the
// servers' catalog with the node's secret; the alloc runners' service
// hooks call it and retry its errors.
type serviceRegistrar struct{ c *Client }

var _ allocrunner.ServiceRegistrar = serviceRegistrar{}

// UpsertServices registers regs, all of allocations on this node.
func (r serviceRegistrar) UpsertServices(regs []*structs.ServiceRegistration) error {
	req := &structs.ServiceRegistrationUpsertRequest{
		Services:     regs,
		NodeID:       r.c.NodeID(),
		WriteRequest: structs.WriteRequest{Region: r.c.cfg.Region, AuthToken: r.c.secretID()},
	}
	return r.c.rpc(methodServiceUpsert, req, &structs.ServiceRegistrationUpsertResponse{})
}

// DeleteServices deregisters instances by ID; one already gone is fine.
func (r serviceRegistrar) DeleteServices(ids []string) error {
	for _, id := range ids {
		req := &structs.ServiceRegistrationDeleteByIDRequest{
			ID:           id,
			NodeID:       r.c.NodeID(),
			WriteRequest: structs.WriteRequest{Region: r.c.cfg.Region, AuthToken: r.c.secretID()},
		}
		if err := r.c.rpc(methodServiceDelete, req, &structs.ServiceRegistrationDeleteByIDResponse{}); err != nil {
			return err
		}
	}
	return nil
}
