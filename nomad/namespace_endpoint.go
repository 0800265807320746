package nomad

import (
	"fmt"

	"github.com/hashicorp/go-memdb"

	"github.com/nomad-edge/nomad/acl"
	"github.com/nomad-edge/nomad/nomad/state"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// Namespace is the Namespace.* RPC endpoint.
type Namespace struct {
	srv *Server
}

// UpsertNamespaces creates or updates namespaces; management only.
func (n *Namespace) UpsertNamespaces(args *structs.NamespaceUpsertRequest, reply *structs.GenericResponse) error {
	if done, err := n.srv.forward("Namespace.UpsertNamespaces", args, reply); done {
		return err
	}
	if err := n.srv.authorize(args.AuthToken, permManagement); err != nil {
		return err
	}
	if len(args.Namespaces) == 0 {
		return fmt.Errorf("%w: must specify at least one namespace", structs.ErrMissingField)
	}
	for _, ns := range args.Namespaces {
		if ns == nil {
			return fmt.Errorf("%w: namespace is null", structs.ErrInvalidRequest)
		}
		if err := ns.Validate(); err != nil {
			return fmt.Errorf("%w: %w", structs.ErrInvalidRequest, err)
		}
	}
	args.AuthToken = ""
	_, index, err := n.srv.raftApply(structs.NamespaceUpsertRequestType, args)
	reply.Index = index
	return err
}

// DeleteNamespaces deletes namespaces by name; management only. The
// default namespace, and a namespace that still has jobs that are not
// dead, are refused (by the state store, inside raft).
func (n *Namespace) DeleteNamespaces(args *structs.NamespaceDeleteRequest, reply *structs.GenericResponse) error {
	if done, err := n.srv.forward("Namespace.DeleteNamespaces", args, reply); done {
		return err
	}
	if err := n.srv.authorize(args.AuthToken, permManagement); err != nil {
		return err
	}
	if len(args.Namespaces) == 0 {
		return fmt.Errorf("%w: must specify at least one namespace", structs.ErrMissingField)
	}
	args.AuthToken = ""
	_, index, err := n.srv.raftApply(structs.NamespaceDeleteRequestType, args)
	reply.Index = index
	return err
}

// ListNamespaces lists the namespaces the caller may see: all of them for
// a management token, otherwise those its policies grant anything in.
func (n *Namespace) ListNamespaces(args *structs.NamespaceListRequest, reply *structs.NamespaceListResponse) error {
	if done, err := n.srv.forwardQuery("Namespace.ListNamespaces", &args.QueryOptions, args, reply); done {
		return err
	}
	a, _, err := n.srv.resolveToken(args.AuthToken)
	if err != nil {
		return err
	}
	return n.srv.blockingRPC(&args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateStore) (uint64, error) {
		iter, err := st.NamespacesByNamePrefix(ws, args.Prefix)
		if err != nil {
			return 0, err
		}
		reply.Namespaces = []*structs.Namespace{}
		// default sits at index 1 without stamping the table; the list's
		// index counts it, as upstream's (1 on a new cluster).
		var index uint64
		for raw := iter.Next(); raw != nil; raw = iter.Next() {
			ns := raw.(*structs.Namespace)
			index = max(index, ns.ModifyIndex)
			if a.AllowNamespace(ns.Name) {
				reply.Namespaces = append(reply.Namespaces, ns)
			}
		}
		tableIdx, err := st.Index(state.TableNamespaces)
		return max(index, tableIdx), err
	})
}

// GetNamespace reads one namespace (nil when it does not exist), for a
// caller granted anything in it.
func (n *Namespace) GetNamespace(args *structs.NamespaceSpecificRequest, reply *structs.SingleNamespaceResponse) error {
	if done, err := n.srv.forwardQuery("Namespace.GetNamespace", &args.QueryOptions, args, reply); done {
		return err
	}
	err := n.srv.authorize(args.AuthToken, permission{
		allow: func(a *acl.ACL) bool { return a.AllowNamespace(args.Name) },
		what:  fmt.Sprintf("any capability in namespace %q", args.Name),
	})
	if err != nil {
		return err
	}
	return n.srv.blockingRPC(&args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateStore) (uint64, error) {
		ns, err := st.NamespaceByName(ws, args.Name)
		if err != nil {
			return 0, err
		}
		reply.Namespace = ns
		if ns != nil {
			return ns.ModifyIndex, nil
		}
		return st.Index(state.TableNamespaces)
	})
}

// authorizeNamespace checks capability c in namespace ns, then that ns
// exists: a request naming a namespace that does not exist is refused
// rather than answered as if the namespace were empty. The ACL check
// comes first so a caller without access learns nothing of which
// namespaces exist.
func (s *Server) authorizeNamespace(secret, ns, c string) error {
	if err := s.authorize(secret, nsCap(ns, c)); err != nil {
		return err
	}
	return s.State().NamespaceExists(ns)
}
