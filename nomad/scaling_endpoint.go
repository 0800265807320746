package nomad

import (
	"fmt"

	"github.com/hashicorp/go-memdb"

	"github.com/nomad-edge/nomad/acl"
	"github.com/nomad-edge/nomad/nomad/state"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// Scaling is the Scaling.* RPC endpoint: the group scaling policies an
// autoscaler discovers. Policies change only with their jobs, so both
// reads block on the jobs table.
type Scaling struct {
	srv *Server
}

// scalingCap allows capability c or read-job in ns, as upstream.
func scalingCap(ns, c string) permission {
	return permission{
		allow: func(a *acl.ACL) bool {
			return a.AllowNamespaceOperation(ns, c) || a.AllowNamespaceOperation(ns, acl.NamespaceCapabilityReadJob)
		},
		what: fmt.Sprintf("%s in namespace %q", c, ns),
	}
}

// ListPolicies lists the scaling policies of the request's namespace
// ("*": of every namespace the caller may read), filtered on job and type
// when the request names them.
func (s *Scaling) ListPolicies(args *structs.ScalingPolicyListRequest, reply *structs.ScalingPolicyListResponse) error {
	if done, err := s.srv.forwardQuery("Scaling.ListPolicies", &args.QueryOptions, args, reply); done {
		return err
	}
	ns := args.RequestNamespace()
	a, _, err := s.srv.resolveToken(args.AuthToken)
	if err != nil {
		return err
	}
	if ns != state.AllNamespaces {
		if err := check(a, args.AuthToken, scalingCap(ns, acl.NamespaceCapabilityListScalingPolicies)); err != nil {
			return err
		}
	}
	return s.srv.blockingRPC(&args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateStore) (uint64, error) {
		policies, err := st.ScalingPolicies(ws, ns)
		if err != nil {
			return 0, err
		}
		reply.Policies = []*structs.ScalingPolicyListStub{}
		for _, p := range policies {
			switch {
			case args.Job != "" && p.JobID() != args.Job:
			case args.Type != "" && p.Type != args.Type:
			case !scalingCap(p.Namespace(), acl.NamespaceCapabilityListScalingPolicies).allow(a):
			default:
				reply.Policies = append(reply.Policies, p.Stub())
			}
		}
		return tableIndex(st, state.TableJobs)
	})
}

// GetPolicy reads one scaling policy; Policy is nil when there is none.
// The caller needs read-scaling-policy (or read-job) in the policy's
// namespace, which only the policy names.
func (s *Scaling) GetPolicy(args *structs.ScalingPolicySpecificRequest, reply *structs.SingleScalingPolicyResponse) error {
	if done, err := s.srv.forwardQuery("Scaling.GetPolicy", &args.QueryOptions, args, reply); done {
		return err
	}
	a, _, err := s.srv.resolveToken(args.AuthToken)
	if err != nil {
		return err
	}
	return s.srv.blockingRPC(&args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateStore) (uint64, error) {
		p, err := st.ScalingPolicyByID(ws, args.ID)
		if err != nil {
			return 0, err
		}
		reply.Policy = nil
		if p != nil {
			if err := check(a, args.AuthToken, scalingCap(p.Namespace(), acl.NamespaceCapabilityReadScalingPolicy)); err != nil {
				return 0, err
			}
			reply.Policy = p.Copy()
		}
		return tableIndex(st, state.TableJobs)
	})
}
