package nomad

import (
	"fmt"

	"github.com/hashicorp/go-memdb"

	"github.com/nomad-edge/nomad/acl"
	"github.com/nomad-edge/nomad/nomad/state"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// NodePool is the NodePool.* RPC endpoint.
type NodePool struct {
	srv *Server
}

// poolCap is read (or write) on node pool name.
func poolCap(name string, write bool) permission {
	what := "read"
	if write {
		what = "write"
	}
	return permission{
		allow: func(a *acl.ACL) bool { return a.AllowNodePool(name, write) },
		what:  fmt.Sprintf("node pool %s on %q", what, name),
	}
}

// UpsertNodePools creates or updates pools; needs write on each.
func (n *NodePool) UpsertNodePools(args *structs.NodePoolUpsertRequest, reply *structs.GenericResponse) error {
	if done, err := n.srv.forward("NodePool.UpsertNodePools", args, reply); done {
		return err
	}
	if len(args.NodePools) == 0 {
		return fmt.Errorf("%w: must specify at least one node pool", structs.ErrMissingField)
	}
	for _, p := range args.NodePools {
		if p == nil {
			return fmt.Errorf("%w: node pool is null", structs.ErrInvalidRequest)
		}
		if err := n.srv.authorize(args.AuthToken, poolCap(p.Name, true)); err != nil {
			return err
		}
		if err := p.Validate(); err != nil {
			return fmt.Errorf("%w: %w", structs.ErrInvalidRequest, err)
		}
		if p.Disconnect != nil {
			// Stored with its defaults, so what `node pool info` shows is
			// what the site outage detector applies.
			p.Disconnect.SiteOutage.Canonicalize()
		}
	}
	args.AuthToken = ""
	_, index, err := n.srv.raftApply(structs.NodePoolUpsertRequestType, args)
	reply.Index = index
	return err
}

// DeleteNodePools deletes pools by name; needs write on each. Built-in
// pools, and pools that still have nodes or live jobs, are refused by the
// state store inside raft.
func (n *NodePool) DeleteNodePools(args *structs.NodePoolDeleteRequest, reply *structs.GenericResponse) error {
	if done, err := n.srv.forward("NodePool.DeleteNodePools", args, reply); done {
		return err
	}
	if len(args.Names) == 0 {
		return fmt.Errorf("%w: must specify at least one node pool", structs.ErrMissingField)
	}
	for _, name := range args.Names {
		if err := n.srv.authorize(args.AuthToken, poolCap(name, true)); err != nil {
			return err
		}
	}
	args.AuthToken = ""
	_, index, err := n.srv.raftApply(structs.NodePoolDeleteRequestType, args)
	reply.Index = index
	return err
}

// List lists the pools the caller may read, by name.
func (n *NodePool) List(args *structs.NodePoolListRequest, reply *structs.NodePoolListResponse) error {
	if done, err := n.srv.forwardQuery("NodePool.List", &args.QueryOptions, args, reply); done {
		return err
	}
	a, _, err := n.srv.resolveToken(args.AuthToken)
	if err != nil {
		return err
	}
	return n.srv.blockingRPC(&args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateStore) (uint64, error) {
		iter, err := st.NodePoolsByNamePrefix(ws, args.Prefix)
		if err != nil {
			return 0, err
		}
		reply.NodePools = []*structs.NodePool{}
		// The built-in pools sit at index 1 without stamping the table;
		// the list's index counts them, as upstream's (1 on a new cluster).
		var index uint64
		for raw := iter.Next(); raw != nil; raw = iter.Next() {
			p := raw.(*structs.NodePool)
			index = max(index, p.ModifyIndex)
			if a.AllowNodePool(p.Name, false) {
				reply.NodePools = append(reply.NodePools, p)
			}
		}
		tableIdx, err := st.Index(state.TableNodePools)
		return max(index, tableIdx), err
	})
}

// GetNodePool reads one pool (nil when it does not exist).
func (n *NodePool) GetNodePool(args *structs.NodePoolSpecificRequest, reply *structs.SingleNodePoolResponse) error {
	if done, err := n.srv.forwardQuery("NodePool.GetNodePool", &args.QueryOptions, args, reply); done {
		return err
	}
	if err := n.srv.authorize(args.AuthToken, poolCap(args.Name, false)); err != nil {
		return err
	}
	return n.srv.blockingRPC(&args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateStore) (uint64, error) {
		p, err := st.NodePoolByName(ws, args.Name)
		if err != nil {
			return 0, err
		}
		reply.NodePool = p
		if p != nil {
			return p.ModifyIndex, nil
		}
		return st.Index(state.TableNodePools)
	})
}

// ListJobs lists the jobs that ask for a pool, in the request's namespace
// ("*" for every namespace the caller may list jobs in). Jobs in "all"
// are listed under "all" only, as upstream.
func (n *NodePool) ListJobs(args *structs.NodePoolSpecificRequest, reply *structs.NodePoolJobsResponse) error {
	if done, err := n.srv.forwardQuery("NodePool.ListJobs", &args.QueryOptions, args, reply); done {
		return err
	}
	if err := n.srv.authorize(args.AuthToken, poolCap(args.Name, false)); err != nil {
		return err
	}
	allowed, err := n.srv.authorizeList(args.AuthToken, args.RequestNamespace(), acl.NamespaceCapabilityListJobs)
	if err != nil {
		return err
	}
	return n.srv.blockingRPC(&args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateStore) (uint64, error) {
		if err := poolExists(ws, st, args.Name); err != nil {
			return 0, err
		}
		jobs, err := st.JobsByNodePool(ws, args.Name)
		if err != nil {
			return 0, err
		}
		reply.Jobs = []*structs.JobListStub{}
		for _, job := range jobs {
			if !allowed(job.Namespace) || (args.RequestNamespace() != state.AllNamespaces && job.Namespace != args.RequestNamespace()) {
				continue
			}
			summary, err := st.JobSummaryByID(ws, job.Namespace, job.ID)
			if err != nil {
				return 0, err
			}
			reply.Jobs = append(reply.Jobs, job.Stub(summary))
		}
		return tableIndex(st, state.TableNodePools, state.TableJobs, state.TableJobSummary)
	})
}

// ListNodes lists the nodes of a pool ("all": every node); needs read on
// the pool and node read.
func (n *NodePool) ListNodes(args *structs.NodePoolSpecificRequest, reply *structs.NodePoolNodesResponse) error {
	if done, err := n.srv.forwardQuery("NodePool.ListNodes", &args.QueryOptions, args, reply); done {
		return err
	}
	if err := n.srv.authorize(args.AuthToken, poolCap(args.Name, false)); err != nil {
		return err
	}
	if err := n.srv.authorize(args.AuthToken, permNodeRead); err != nil {
		return err
	}
	return n.srv.blockingRPC(&args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateStore) (uint64, error) {
		if err := poolExists(ws, st, args.Name); err != nil {
			return 0, err
		}
		nodes, err := st.NodesByNodePool(ws, args.Name)
		if err != nil {
			return 0, err
		}
		reply.Nodes = make([]*structs.NodeListStub, 0, len(nodes))
		for _, node := range nodes {
			reply.Nodes = append(reply.Nodes, node.Stub())
		}
		return tableIndex(st, state.TableNodePools, state.TableNodes)
	})
}

func poolExists(ws memdb.WatchSet, st *state.StateStore, name string) error {
	p, err := st.NodePoolByName(ws, name)
	if err != nil {
		return err
	}
	if p == nil {
		return fmt.Errorf("%w: %q", structs.ErrUnknownNodePool, name)
	}
	return nil
}

// ListSiteOutages lists the site outages declared for a pool's sites (see
// docs/concepts/disconnected-clients.md, "Site outages"); needs read on
// the pool.
func (n *NodePool) ListSiteOutages(args *structs.NodePoolSpecificRequest, reply *structs.SiteOutageListResponse) error {
	if done, err := n.srv.forwardQuery("NodePool.ListSiteOutages", &args.QueryOptions, args, reply); done {
		return err
	}
	if err := n.srv.authorize(args.AuthToken, poolCap(args.Name, false)); err != nil {
		return err
	}
	return n.srv.blockingRPC(&args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateStore) (uint64, error) {
		if err := poolExists(ws, st, args.Name); err != nil {
			return 0, err
		}
		outages, err := st.SiteOutages(ws)
		if err != nil {
			return 0, err
		}
		reply.SiteOutages = []*structs.SiteOutage{}
		for _, o := range outages {
			if o.Pool == args.Name {
				reply.SiteOutages = append(reply.SiteOutages, o)
			}
		}
		return tableIndex(st, state.TableNodePools, state.TableSiteOutages)
	})
}
