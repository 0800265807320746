package nomad

import (
	"fmt"
	"time"

	"github.com/nomad-edge/nomad/acl"
	"github.com/nomad-edge/nomad/nomad/state"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// permission is one capability an endpoint needs: how to ask an ACL for
// it, and how to name it in a refusal.
type permission struct {
	allow func(*acl.ACL) bool
	what  string
}

// nsCap is capability c in namespace ns.
func nsCap(ns, c string) permission {
	return permission{
		allow: func(a *acl.ACL) bool { return a.AllowNamespaceOperation(ns, c) },
		what:  fmt.Sprintf("%s in namespace %q", c, ns),
	}
}

var (
	permNodeRead      = permission{(*acl.ACL).AllowNodeRead, "node read"}
	permNodeWrite     = permission{(*acl.ACL).AllowNodeWrite, "node write"}
	permOperatorRead  = permission{(*acl.ACL).AllowOperatorRead, "operator read"}
	permOperatorWrite = permission{(*acl.ACL).AllowOperatorWrite, "operator write"}
	permManagement    = permission{(*acl.ACL).IsManagement, "a management token"}
)

// resolveToken returns what the holder of secret may do: nil (anything)
// when ACLs are off, the anonymous policy's ACL for an empty secret, and
// ErrTokenNotFound for a secret no token has.
func (s *Server) resolveToken(secret string) (*acl.ACL, *structs.ACLToken, error) {
	if !s.config.ACLEnabled {
		return nil, nil, nil
	}
	if looksLikeJWT(secret) {
		a, err := s.resolveIdentity(secret)
		return a, nil, err
	}
	return resolveToken(s.State(), s.aclCache, secret, s.clock.Now())
}

// resolveToken is what secret may do at now: a token past its expiration
// time is refused (ErrTokenExpired), whatever it held.
func resolveToken(st *state.StateStore, cache *aclCache, secret string, now time.Time) (*acl.ACL, *structs.ACLToken, error) {
	names := []string{structs.AnonymousPolicyName}
	var token *structs.ACLToken
	if secret != "" {
		var err error
		if token, err = st.ACLTokenBySecretID(nil, secret); err != nil {
			return nil, nil, err
		}
		if token == nil {
			return nil, nil, structs.ErrTokenNotFound
		}
		if token.IsExpired(now) {
			return nil, nil, structs.ErrTokenExpired
		}
		if token.IsManagement() {
			return acl.ManagementACL, token, nil
		}
		names = token.Policies
	}
	a, err := aclForPolicies(st, cache, names)
	if err != nil {
		return nil, nil, err
	}
	return a, token, nil
}

// compilePolicies parses stored policies. A policy whose rules no longer
// parse grants nothing rather than failing every call: rules are checked
// when written.
func compilePolicies(stored []*structs.ACLPolicy) []*acl.Policy {
	out := make([]*acl.Policy, 0, len(stored))
	for _, p := range stored {
		if parsed, err := acl.Parse(p.Name, p.Rules); err == nil {
			out = append(out, parsed)
		}
	}
	return out
}

// authorize refuses, with what was missing, a caller whose token lacks
// perm.
func (s *Server) authorize(secret string, perm permission) error {
	a, _, err := s.resolveToken(secret)
	if err != nil {
		return err
	}
	return check(a, secret, perm)
}

func check(a *acl.ACL, secret string, perm permission) error {
	if perm.allow(a) {
		return nil
	}
	if secret == "" {
		return fmt.Errorf("%w: no ACL token given (set X-Nomad-Token, NOMAD_TOKEN or -token), and anonymous requests lack %s",
			structs.ErrPermissionDenied, perm.what)
	}
	return fmt.Errorf("%w: token lacks %s", structs.ErrPermissionDenied, perm.what)
}

// nsFilter returns a test of whether the caller may read jobs in a
// namespace, for lists across namespaces that drop what it may not see.
func (s *Server) nsFilter(secret string) (func(ns string) bool, error) {
	a, _, err := s.resolveToken(secret)
	if err != nil {
		return nil, err
	}
	return func(ns string) bool { return a.AllowNamespaceOperation(ns, acl.NamespaceCapabilityReadJob) }, nil
}

// authorizeList checks capability c in ns for a list. A list across
// every namespace ("*") needs no single capability: it returns the
// filter that drops what the caller may not read.
func (s *Server) authorizeList(secret, ns, c string) (func(ns string) bool, error) {
	if ns == state.AllNamespaces {
		return s.nsFilter(secret)
	}
	if err := s.authorizeNamespace(secret, ns, c); err != nil {
		return nil, err
	}
	return func(string) bool { return true }, nil
}

// readJobCheck resolves the caller once, for reads that learn the
// namespace only from the object they find.
func (s *Server) readJobCheck(secret string) (func(ns string) error, error) {
	a, _, err := s.resolveToken(secret)
	if err != nil {
		return nil, err
	}
	return func(ns string) error { return check(a, secret, nsCap(ns, acl.NamespaceCapabilityReadJob)) }, nil
}

// readJobQuery answers a read of job data in the request's namespace:
// from the leader unless the caller allows a stale read, refused without
// read-job there, and blocking on run as the request asks. method is the
// RPC's name, for the forward.
func (s *Server) readJobQuery(method string, args structs.Queryer, reply structs.QueryReplier, run queryFn) error {
	q := args.QueryOpts()
	if done, err := s.forwardQuery(method, q, args, reply); done {
		return err
	}
	if err := s.authorizeNamespace(q.AuthToken, q.RequestNamespace(), acl.NamespaceCapabilityReadJob); err != nil {
		return err
	}
	return s.blockingRPC(q, reply.QueryMetadata(), run)
}

// mayPullAlloc lets a client pull the allocations of its own node with
// its node secret (the client knows no ACL token), and anyone else the
// allocations their token may read.
func (s *Server) mayPullAlloc(st *state.StateStore, secret string, alloc *structs.Allocation, canRead func(string) error) bool {
	if canRead(alloc.Namespace) == nil {
		return true
	}
	node, err := st.NodeByID(nil, alloc.NodeID)
	return err == nil && node != nil && authorizeNode(node, secret) == nil
}
