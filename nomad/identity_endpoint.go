package nomad

import (
	"fmt"
	"slices"

	"github.com/nomad-edge/nomad/acl"
	"github.com/nomad-edge/nomad/nomad/state"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// SignIdentities signs the workload identities of tasks of allocations
// on the calling node (AuthToken is the node's secret). An allocation
// that is gone, finished, on another node, or has no such task is
// rejected with the reason, the others signed.
func (a *Alloc) SignIdentities(args *structs.AllocIdentitiesRequest, reply *structs.AllocIdentitiesResponse) error {
	if done, err := a.srv.forwardQuery("Alloc.SignIdentities", &args.QueryOptions, args, reply); done {
		return err
	}
	st := a.srv.State()
	authed := map[string]bool{}
	for _, req := range args.Identities {
		reject := func(reason string) {
			reply.Rejections = append(reply.Rejections, &structs.WorkloadIdentityRejection{WorkloadIdentityRequest: *req, Reason: reason})
		}
		alloc, err := st.AllocByID(nil, req.AllocID)
		if err != nil {
			return err
		}
		if alloc == nil || alloc.ClientTerminalStatus() {
			reject("allocation not found or terminal")
			continue
		}
		if !authed[alloc.NodeID] {
			node, err := st.NodeByID(nil, alloc.NodeID)
			if err != nil {
				return err
			}
			if node == nil {
				reject("allocation's node not found")
				continue
			}
			if err := authorizeNode(node, args.AuthToken); err != nil {
				return err
			}
			authed[alloc.NodeID] = true
		}
		if alloc.Job == nil || alloc.Job.LookupTaskGroup(alloc.TaskGroup) == nil || alloc.Job.LookupTaskGroup(alloc.TaskGroup).LookupTask(req.TaskName) == nil {
			reject(fmt.Sprintf("allocation has no task %q", req.TaskName))
			continue
		}
		if n := req.IdentityName; n != "" && n != structs.WorkloadIdentityDefaultName && taskIdentity(alloc, req.TaskName, n) == nil {
			reject(fmt.Sprintf("task %q has no identity %q", req.TaskName, n))
			continue
		}
		signed, err := a.srv.signIdentity(alloc, req.TaskName, req.IdentityName)
		if err != nil {
			return err
		}
		reply.SignedIdentities = append(reply.SignedIdentities, signed)
	}
	return nil
}

// ListPublic lists the public keys workload identities are signed with;
// anyone may read them (they verify, they do not sign).
func (k *Keyring) ListPublic(args *structs.GenericRequest, reply *structs.KeyringListPublicResponse) error {
	if done, err := k.srv.forwardQuery("Keyring.ListPublic", &args.QueryOptions, args, reply); done {
		return err
	}
	keys, index, err := k.srv.publicKeys()
	reply.PublicKeys, reply.Index = keys, index
	return err
}

// resolveIdentity is what a workload identity may do: read and list the
// variables of its own job, group and task (nomad/jobs/<job>,
// nomad/jobs/<job>/<group>, nomad/jobs/<job>/<group>/<task>) and list
// nomad/jobs, as upstream's implicit policy, while its allocation runs.
// Its reads of services are authorizeServiceRead's. The policies
// attached to its task (JobACL) add their rules, as upstream's
// workload-associated policies.
func (s *Server) resolveIdentity(jwt string) (*acl.ACL, error) {
	c, err := s.identityClaims(jwt)
	if err != nil {
		return nil, err
	}
	return s.identityACL(c)
}

// identityACL is what verified claims may do (resolveIdentity).
func (s *Server) identityACL(c *structs.IdentityClaims) (*acl.ACL, error) {
	readList := []string{acl.VariablesCapabilityRead, acl.VariablesCapabilityList}
	base := "nomad/jobs/" + c.JobID
	paths := []*acl.VariablesPathPolicy{
		{PathSpec: "nomad/jobs", Capabilities: []string{acl.VariablesCapabilityList}},
		{PathSpec: base, Capabilities: readList},
		{PathSpec: base + "/" + c.TaskGroup, Capabilities: readList},
	}
	if c.TaskName != "" {
		paths = append(paths, &acl.VariablesPathPolicy{PathSpec: base + "/" + c.TaskGroup + "/" + c.TaskName, Capabilities: readList})
	}
	attached, err := s.State().ACLPoliciesForWorkload(nil, c.Namespace, c.JobID, c.TaskGroup, c.TaskName)
	if err != nil {
		return nil, err
	}
	implicit := &acl.Policy{Namespaces: []*acl.NamespacePolicy{{
		Name: c.Namespace, Variables: &acl.VariablesPolicy{Paths: paths},
	}}}
	return acl.NewACL(append(compilePolicies(attached), implicit)), nil
}

// identityClaims verifies a workload identity and checks that its
// allocation still runs: an identity outlives neither.
func (s *Server) identityClaims(jwt string) (*structs.IdentityClaims, error) {
	c, err := s.encrypter.verifyClaims(jwt, s.clock.Now())
	if err != nil {
		return nil, err
	}
	// A named identity is for the party its audience names: presented
	// here, it is no token of Nomad's.
	if !slices.Contains(c.Audience, structs.WorkloadIdentityAudience) {
		return nil, fmt.Errorf("%w: its audience %v is not Nomad's (%s): only a task's default identity is a token for Nomad's API",
			ErrInvalidIdentity, c.Audience, structs.WorkloadIdentityAudience)
	}
	alloc, err := s.State().AllocByID(nil, c.AllocationID)
	if err != nil {
		return nil, err
	}
	if alloc == nil || alloc.ClientTerminalStatus() || alloc.Namespace != c.Namespace || alloc.JobID != c.JobID {
		return nil, fmt.Errorf("%w: its allocation is gone or finished", ErrInvalidIdentity)
	}
	return c, nil
}

// authorizeServiceRead checks that the caller may read the service
// registrations of ns, and returns the filter for a list across
// namespaces ("*"). A token needs read-job there; a workload identity
// reads those of its own namespace, as upstream's implicit policy lets
// nomadService and nomadServices do, and those of the namespaces where a
// policy attached to it grants read-job.
func (s *Server) authorizeServiceRead(secret, ns string) (func(ns string) bool, error) {
	if !s.config.ACLEnabled || !looksLikeJWT(secret) {
		return s.authorizeList(secret, ns, acl.NamespaceCapabilityReadJob)
	}
	c, err := s.identityClaims(secret)
	if err != nil {
		return nil, err
	}
	a, err := s.identityACL(c)
	if err != nil {
		return nil, err
	}
	may := func(n string) bool {
		return n == c.Namespace || a.AllowNamespaceOperation(n, acl.NamespaceCapabilityReadJob)
	}
	if ns != state.AllNamespaces && !may(ns) {
		return nil, fmt.Errorf("%w: a workload identity reads the services of its own namespace (%q) and of those its attached policies grant read-job in, not of %q",
			structs.ErrPermissionDenied, c.Namespace, ns)
	}
	return may, nil
}
