package nomad

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/hashicorp/go-memdb"

	"github.com/nomad-edge/nomad/acl"
	"github.com/nomad-edge/nomad/nomad/state"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// ServiceRegistration is the ServiceRegistration.* RPC endpoint: the
// catalog of services with provider "nomad". Clients write it with their
// node's secret, for their own allocations only; operators read it with
// read-job and delete from it with submit-job, as upstream.
type ServiceRegistration struct {
	srv *Server
}

// Upsert writes registrations of allocations on the calling node.
func (s *ServiceRegistration) Upsert(args *structs.ServiceRegistrationUpsertRequest, reply *structs.ServiceRegistrationUpsertResponse) error {
	if done, err := s.srv.forward("ServiceRegistration.Upsert", args, reply); done {
		return err
	}
	if len(args.Services) == 0 {
		return fmt.Errorf("%w: must register at least one service", structs.ErrMissingField)
	}
	if nulls := structs.NullElements("Services", args.Services); len(nulls) > 0 {
		return fmt.Errorf("%w: %w", structs.ErrInvalidRequest, &structs.ValidationError{Problems: nulls})
	}
	st := s.srv.State()
	if _, err := s.authorizeNodeWrite(st, args.NodeID, args.AuthToken); err != nil {
		return err
	}
	for _, reg := range args.Services {
		if err := reg.Validate(); err != nil {
			return fmt.Errorf("%w: %w", structs.ErrInvalidRequest, err)
		}
		if err := checkOwnRegistration(st, args.NodeID, reg); err != nil {
			return err
		}
	}
	args.AuthToken = ""
	_, index, err := s.srv.raftApply(structs.ServiceRegistrationUpsertRequestType, args)
	reply.Index = index
	return err
}

// authorizeNodeWrite checks that secret is nodeID's and that the servers
// take updates from it (a node they hold down or disconnected may not
// write, as for allocation updates).
func (s *ServiceRegistration) authorizeNodeWrite(st *state.StateStore, nodeID, secret string) (*structs.Node, error) {
	if nodeID == "" {
		return nil, fmt.Errorf("%w: missing node ID for service registration", structs.ErrMissingField)
	}
	node, err := st.NodeByID(nil, nodeID)
	if err != nil {
		return nil, err
	}
	if node == nil {
		return nil, fmt.Errorf("%w: %s", structs.ErrUnknownNode, nodeID)
	}
	if err := authorizeNode(node, secret); err != nil {
		return nil, err
	}
	if node.Status == structs.NodeStatusDown || node.Status == structs.NodeStatusDisconnected {
		return nil, fmt.Errorf("%w: node %s is %s", structs.ErrNodeNotReady, node.ID, node.Status)
	}
	return node, nil
}

// checkOwnRegistration refuses a registration that is not of a live
// allocation on nodeID, or that misnames the allocation's job or
// namespace: a node may advertise only what it runs.
func checkOwnRegistration(st *state.StateStore, nodeID string, reg *structs.ServiceRegistration) error {
	if reg.NodeID != nodeID {
		return fmt.Errorf("%w: service registration %s names node %s, not the calling node %s",
			structs.ErrPermissionDenied, reg.ID, reg.NodeID, nodeID)
	}
	alloc, err := st.AllocByID(nil, reg.AllocID)
	if err != nil {
		return err
	}
	if alloc == nil {
		return fmt.Errorf("%w: %s", structs.ErrUnknownAlloc, reg.AllocID)
	}
	if alloc.NodeID != nodeID {
		return fmt.Errorf("%w: allocation %s is on node %s, not on node %s",
			structs.ErrForeignAlloc, alloc.ID, alloc.NodeID, nodeID)
	}
	if alloc.Namespace != reg.Namespace || alloc.JobID != reg.JobID {
		return fmt.Errorf("%w: service registration %s names job %q in namespace %q; allocation %s is of job %q in %q",
			structs.ErrInvalidRequest, reg.ID, reg.JobID, reg.Namespace, alloc.ID, alloc.JobID, alloc.Namespace)
	}
	return nil
}

// DeleteByID deletes one registration: by its own node (NodeID and the
// node's secret) or by a caller with submit-job in its namespace.
func (s *ServiceRegistration) DeleteByID(args *structs.ServiceRegistrationDeleteByIDRequest, reply *structs.ServiceRegistrationDeleteByIDResponse) error {
	if done, err := s.srv.forward("ServiceRegistration.DeleteByID", args, reply); done {
		return err
	}
	if args.ID == "" {
		return fmt.Errorf("%w: missing service registration ID", structs.ErrMissingField)
	}
	st := s.srv.State()
	reg, err := st.ServiceRegistrationByID(nil, args.ID)
	if err != nil {
		return err
	}
	if args.NodeID != "" {
		if _, err := s.authorizeNodeWrite(st, args.NodeID, args.AuthToken); err != nil {
			return err
		}
		if reg == nil {
			return nil // already gone: the node's delete is done
		}
		if reg.NodeID != args.NodeID {
			return fmt.Errorf("%w: service registration %s is on node %s, not on node %s",
				structs.ErrForeignAlloc, reg.ID, reg.NodeID, args.NodeID)
		}
	} else {
		ns := args.RequestNamespace()
		if reg != nil {
			ns = reg.Namespace
		}
		if err := s.srv.authorize(args.AuthToken, nsCap(ns, acl.NamespaceCapabilitySubmitJob)); err != nil {
			return err
		}
		if reg == nil {
			return fmt.Errorf("%w: %s", structs.ErrUnknownServiceRegistration, args.ID)
		}
	}
	args.AuthToken = ""
	_, index, err := s.srv.raftApply(structs.ServiceRegistrationDeleteByIDRequestType, args)
	reply.Index = index
	return err
}

// List lists the services of the request's namespace, or of every
// namespace the caller may read for "*", with their tags.
func (s *ServiceRegistration) List(args *structs.ServiceRegistrationListRequest, reply *structs.ServiceRegistrationListResponse) error {
	if done, err := s.srv.forwardQuery("ServiceRegistration.List", &args.QueryOptions, args, reply); done {
		return err
	}
	ns := args.RequestNamespace()
	allowed, err := s.srv.authorizeServiceRead(args.AuthToken, ns)
	if err != nil {
		return err
	}
	return s.srv.blockingRPC(&args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateStore) (uint64, error) {
		regs, err := st.ServiceRegistrationsByNamespace(ws, ns)
		if err != nil {
			return 0, err
		}
		regs = slices.DeleteFunc(slices.Clone(regs), func(r *structs.ServiceRegistration) bool { return !allowed(r.Namespace) })
		reply.Services = state.ServiceStubs(regs)
		return st.Index(state.TableServiceRegistrations)
	})
}

// GetService returns the instances of one service in the request's
// namespace, ordered by ID. Instances of unknown allocations are left out
// unless IncludeUnknown asks for them.
func (s *ServiceRegistration) GetService(args *structs.ServiceRegistrationByNameRequest, reply *structs.ServiceRegistrationByNameResponse) error {
	if args.ServiceName == "" {
		return fmt.Errorf("%w: missing service name", structs.ErrMissingField)
	}
	if done, err := s.srv.forwardQuery("ServiceRegistration.GetService", &args.QueryOptions, args, reply); done {
		return err
	}
	if _, err := s.srv.authorizeServiceRead(args.AuthToken, args.RequestNamespace()); err != nil {
		return err
	}
	return s.srv.blockingRPC(&args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateStore) (uint64, error) {
		regs, err := st.ServiceRegistrationsByName(ws, args.RequestNamespace(), args.ServiceName)
		if err != nil {
			return 0, err
		}
		reply.Services = visibleRegistrations(regs, args.IncludeUnknown)
		return st.Index(state.TableServiceRegistrations)
	})
}

// ListByAlloc returns an allocation's instances, whatever their status.
func (s *ServiceRegistration) ListByAlloc(args *structs.ServiceRegistrationsRequest, reply *structs.ServiceRegistrationsResponse) error {
	if done, err := s.srv.forwardQuery("ServiceRegistration.ListByAlloc", &args.QueryOptions, args, reply); done {
		return err
	}
	canRead, err := s.srv.readJobCheck(args.AuthToken)
	if err != nil {
		return err
	}
	return s.srv.blockingRPC(&args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateStore) (uint64, error) {
		alloc, err := st.AllocByID(ws, args.ID)
		if err != nil {
			return 0, err
		}
		if alloc == nil {
			reply.Services = nil
			return st.Index(state.TableAllocs)
		}
		if err := canRead(alloc.Namespace); err != nil {
			return 0, err
		}
		regs, err := st.ServiceRegistrationsByAlloc(ws, args.ID)
		if err != nil {
			return 0, err
		}
		reply.Services = visibleRegistrations(regs, true)
		return st.Index(state.TableServiceRegistrations)
	})
}

// ListByJob returns a job's instances in the request's namespace,
// whatever their status; nil when the job does not exist.
func (s *ServiceRegistration) ListByJob(args *structs.ServiceRegistrationsRequest, reply *structs.ServiceRegistrationsResponse) error {
	return s.srv.readJobQuery("ServiceRegistration.ListByJob", args, reply, func(ws memdb.WatchSet, st *state.StateStore) (uint64, error) {
		job, err := st.JobByID(ws, args.RequestNamespace(), args.ID)
		if err != nil {
			return 0, err
		}
		if job == nil {
			reply.Services = nil
			return st.Index(state.TableJobs)
		}
		regs, err := st.ServiceRegistrationsByJob(ws, args.RequestNamespace(), args.ID)
		if err != nil {
			return 0, err
		}
		reply.Services = visibleRegistrations(regs, true)
		return st.Index(state.TableServiceRegistrations)
	})
}

// visibleRegistrations is regs without the unknown instances unless
// includeUnknown, ordered by ID, never nil (an empty service is [] on the
// wire, as upstream).
func visibleRegistrations(regs []*structs.ServiceRegistration, includeUnknown bool) []*structs.ServiceRegistration {
	out := make([]*structs.ServiceRegistration, 0, len(regs))
	for _, r := range regs {
		if includeUnknown || r.Status != structs.ServiceRegistrationStatusUnknown {
			out = append(out, r)
		}
	}
	slices.SortFunc(out, func(a, b *structs.ServiceRegistration) int { return cmp.Compare(a.ID, b.ID) })
	return out
}
