package nomad

import (
	"fmt"
	"sort"
	"strings"

	"github.com/hashicorp/go-memdb"

	"github.com/nomad-edge/nomad/acl"
	"github.com/nomad-edge/nomad/nomad/state"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// ACL is the ACL.* RPC endpoint: bootstrap, policies and tokens.
type ACL struct {
	srv *Server
}

func (a *ACL) enabled() error {
	if !a.srv.config.ACLEnabled {
		return structs.ErrACLDisabled
	}
	return nil
}

// Bootstrap makes the first management token. It needs no token and
// works once; the state store refuses a second one.
func (a *ACL) Bootstrap(args *structs.ACLTokenBootstrapRequest, reply *structs.ACLTokenUpsertResponse) error {
	if err := a.enabled(); err != nil {
		return err
	}
	a.srv.aclWriteRegion(&args.WriteRequest)
	if done, err := a.srv.forward("ACL.Bootstrap", args, reply); done {
		return err
	}
	args.AuthToken = ""
	secret := args.BootstrapSecret
	if secret == "" {
		secret = structs.GenerateUUID()
	} else if !structs.IsUUID(secret) {
		return fmt.Errorf("%w: invalid BootstrapSecret: it must be a UUID", structs.ErrInvalidRequest)
	}
	args.BootstrapSecret = ""
	args.Token = &structs.ACLToken{
		AccessorID: structs.GenerateUUID(), SecretID: secret,
		Name: "Bootstrap Token", Type: structs.ACLManagementToken, Global: true,
		CreateTime: a.srv.clock.Now().UTC(),
	}
	_, index, err := a.srv.raftApply(structs.ACLTokenBootstrapRequestType, args)
	if err != nil {
		return err
	}
	tok, err := a.srv.State().ACLTokenByAccessorID(nil, args.Token.AccessorID)
	if err != nil {
		return err
	}
	reply.Tokens = []*structs.ACLToken{tok}
	reply.Index = index
	return nil
}

// UpsertPolicies creates or updates policies; it needs a management token
// and refuses rules that do not parse.
func (a *ACL) UpsertPolicies(args *structs.ACLPolicyUpsertRequest, reply *structs.GenericResponse) error {
	if err := a.enabled(); err != nil {
		return err
	}
	a.srv.aclWriteRegion(&args.WriteRequest)
	if done, err := a.srv.forward("ACL.UpsertPolicies", args, reply); done {
		return err
	}
	if err := a.srv.authorize(args.AuthToken, permManagement); err != nil {
		return err
	}
	if len(args.Policies) == 0 {
		return fmt.Errorf("%w: must specify as least one policy", structs.ErrMissingField)
	}
	for _, p := range args.Policies {
		if err := p.Validate(); err != nil {
			return err
		}
		if _, err := acl.Parse(p.Name, p.Rules); err != nil {
			return fmt.Errorf("%w: policy %q: failed to parse rules:\n%w", structs.ErrInvalidRequest, p.Name, err)
		}
	}
	args.AuthToken = ""
	_, index, err := a.srv.raftApply(structs.ACLPolicyUpsertRequestType, args)
	reply.Index = index
	return err
}

// DeletePolicies deletes policies by name (management only).
func (a *ACL) DeletePolicies(args *structs.ACLPolicyDeleteRequest, reply *structs.GenericResponse) error {
	if err := a.enabled(); err != nil {
		return err
	}
	a.srv.aclWriteRegion(&args.WriteRequest)
	if done, err := a.srv.forward("ACL.DeletePolicies", args, reply); done {
		return err
	}
	if err := a.srv.authorize(args.AuthToken, permManagement); err != nil {
		return err
	}
	if len(args.Names) == 0 {
		return fmt.Errorf("%w: must specify as least one policy", structs.ErrMissingField)
	}
	args.AuthToken = ""
	_, index, err := a.srv.raftApply(structs.ACLPolicyDeleteRequestType, args)
	reply.Index = index
	return err
}

// GetPolicy reads a policy: a management token reads any, another token
// only the policies it holds (as upstream).
func (a *ACL) GetPolicy(args *structs.ACLPolicySpecificRequest, reply *structs.ACLPolicySingleResponse) error {
	if err := a.enabled(); err != nil {
		return err
	}
	if done, err := a.srv.forwardQuery("ACL.GetPolicy", &args.QueryOptions, args, reply); done {
		return err
	}
	holds, err := a.policyFilter(args.AuthToken)
	if err != nil {
		return err
	}
	if !holds(args.Name) {
		deny := func(*acl.ACL) bool { return false }
		return check(nil, args.AuthToken, permission{allow: deny, what: fmt.Sprintf("policy %q", args.Name)})
	}
	return a.srv.blockingRPC(&args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateStore) (uint64, error) {
		p, err := st.ACLPolicyByName(ws, args.Name)
		if err != nil {
			return 0, err
		}
		reply.Policy = p
		return st.Index(state.TableACLPolicies)
	})
}

// policyFilter tells which policies the caller may read.
func (a *ACL) policyFilter(secret string) (func(string) bool, error) {
	aclObj, token, err := a.srv.resolveToken(secret)
	if err != nil {
		return nil, err
	}
	if aclObj.IsManagement() {
		return func(string) bool { return true }, nil
	}
	held := map[string]bool{}
	if token != nil {
		for _, p := range token.Policies {
			held[p] = true
		}
	}
	return func(name string) bool { return held[name] }, nil
}

// ListPolicies lists the policies the caller may read.
func (a *ACL) ListPolicies(args *structs.ACLPolicyListRequest, reply *structs.ACLPolicyListResponse) error {
	if err := a.enabled(); err != nil {
		return err
	}
	if done, err := a.srv.forwardQuery("ACL.ListPolicies", &args.QueryOptions, args, reply); done {
		return err
	}
	holds, err := a.policyFilter(args.AuthToken)
	if err != nil {
		return err
	}
	return a.srv.blockingRPC(&args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateStore) (uint64, error) {
		iter, err := st.ACLPolicies(ws)
		if err != nil {
			return 0, err
		}
		reply.Policies = []*structs.ACLPolicyListStub{}
		for raw := iter.Next(); raw != nil; raw = iter.Next() {
			if p := raw.(*structs.ACLPolicy); holds(p.Name) && (args.Prefix == "" || strings.HasPrefix(p.Name, args.Prefix)) {
				reply.Policies = append(reply.Policies, p.Stub())
			}
		}
		return st.Index(state.TableACLPolicies)
	})
}

// UpsertTokens creates tokens (a fresh accessor and secret each) or
// updates them by accessor ID; management only.
func (a *ACL) UpsertTokens(args *structs.ACLTokenUpsertRequest, reply *structs.ACLTokenUpsertResponse) error {
	if err := a.enabled(); err != nil {
		return err
	}
	global := make([]bool, 0, len(args.Tokens))
	for _, t := range args.Tokens {
		global = append(global, t != nil && t.Global)
	}
	if err := a.srv.tokenWriteRegion(&args.WriteRequest, global); err != nil {
		return err
	}
	if done, err := a.srv.forward("ACL.UpsertTokens", args, reply); done {
		return err
	}
	if err := a.srv.authorize(args.AuthToken, permManagement); err != nil {
		return err
	}
	if len(args.Tokens) == 0 {
		return fmt.Errorf("%w: must specify as least one token", structs.ErrMissingField)
	}
	st := a.srv.State()
	now := a.srv.clock.Now().UTC()
	for _, t := range args.Tokens {
		if err := t.Validate(); err != nil {
			return fmt.Errorf("%w: token %q: %w", structs.ErrInvalidRequest, t.Name, err)
		}
		if t.AccessorID == "" {
			t.AccessorID, t.SecretID, t.CreateTime = structs.GenerateUUID(), structs.GenerateUUID(), now
			if err := t.SetExpiration(now); err != nil {
				return fmt.Errorf("%w: token %q: %w", structs.ErrInvalidRequest, t.Name, err)
			}
			continue
		}
		existing, err := st.ACLTokenByAccessorID(nil, t.AccessorID)
		if err != nil {
			return err
		}
		if existing == nil {
			return fmt.Errorf("%w: %s", structs.ErrUnknownACLToken, t.AccessorID)
		}
		// The expiration is fixed at creation, as upstream's: an update
		// that names another is refused, one that names none keeps it.
		if t.ExpirationTTL != 0 && t.ExpirationTTL != existing.ExpirationTTL ||
			t.ExpirationTime != nil && (existing.ExpirationTime == nil || !t.ExpirationTime.Equal(*existing.ExpirationTime)) {
			return fmt.Errorf("%w: token %q: its expiration cannot be changed", structs.ErrInvalidRequest, t.Name)
		}
		t.ExpirationTime, t.ExpirationTTL = existing.ExpirationTime, existing.ExpirationTTL
	}
	args.AuthToken = ""
	_, index, err := a.srv.raftApply(structs.ACLTokenUpsertRequestType, args)
	if err != nil {
		return err
	}
	for _, t := range args.Tokens {
		stored, err := a.srv.State().ACLTokenByAccessorID(nil, t.AccessorID)
		if err != nil {
			return err
		}
		reply.Tokens = append(reply.Tokens, stored)
	}
	reply.Index = index
	return nil
}

// DeleteTokens deletes tokens by accessor ID; management only.
func (a *ACL) DeleteTokens(args *structs.ACLTokenDeleteRequest, reply *structs.GenericResponse) error {
	if err := a.enabled(); err != nil {
		return err
	}
	if err := a.srv.tokenDeleteRegion(args); err != nil {
		return err
	}
	if done, err := a.srv.forward("ACL.DeleteTokens", args, reply); done {
		return err
	}
	if err := a.srv.authorize(args.AuthToken, permManagement); err != nil {
		return err
	}
	if len(args.AccessorIDs) == 0 {
		return fmt.Errorf("%w: must specify as least one token", structs.ErrMissingField)
	}
	args.AuthToken = ""
	_, index, err := a.srv.raftApply(structs.ACLTokenDeleteRequestType, args)
	reply.Index = index
	return err
}

// GetToken reads a token by accessor ID: a management token reads any,
// another token only itself.
func (a *ACL) GetToken(args *structs.ACLTokenSpecificRequest, reply *structs.ACLTokenSingleResponse) error {
	if err := a.enabled(); err != nil {
		return err
	}
	if done, err := a.srv.forwardQuery("ACL.GetToken", &args.QueryOptions, args, reply); done {
		return err
	}
	aclObj, caller, err := a.srv.resolveToken(args.AuthToken)
	if err != nil {
		return err
	}
	if !aclObj.IsManagement() && (caller == nil || caller.AccessorID != args.AccessorID) {
		return check(aclObj, args.AuthToken, permManagement)
	}
	return a.srv.blockingRPC(&args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateStore) (uint64, error) {
		t, err := st.ACLTokenByAccessorID(ws, args.AccessorID)
		if err != nil {
			return 0, err
		}
		reply.Token = t
		return st.Index(state.TableACLTokens)
	})
}

// ListTokens lists tokens without their secrets; management only.
func (a *ACL) ListTokens(args *structs.ACLTokenListRequest, reply *structs.ACLTokenListResponse) error {
	if err := a.enabled(); err != nil {
		return err
	}
	if done, err := a.srv.forwardQuery("ACL.ListTokens", &args.QueryOptions, args, reply); done {
		return err
	}
	if err := a.srv.authorize(args.AuthToken, permManagement); err != nil {
		return err
	}
	return a.srv.blockingRPC(&args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateStore) (uint64, error) {
		iter, err := st.ACLTokens(ws)
		if err != nil {
			return 0, err
		}
		reply.Tokens = []*structs.ACLTokenListStub{}
		for raw := iter.Next(); raw != nil; raw = iter.Next() {
			if t := raw.(*structs.ACLToken); args.Prefix == "" || strings.HasPrefix(t.AccessorID, args.Prefix) {
				reply.Tokens = append(reply.Tokens, t.Stub())
			}
		}
		sort.Slice(reply.Tokens, func(i, j int) bool { return reply.Tokens[i].CreateIndex < reply.Tokens[j].CreateIndex })
		return st.Index(state.TableACLTokens)
	})
}

// ResolveToken returns the caller's own token (nil when anonymous) and
// the policies it holds: `nomad acl token self`, and the agent's own
// endpoints, which check without an RPC of their own.
func (a *ACL) ResolveToken(args *structs.ResolveACLTokenRequest, reply *structs.ResolveACLTokenResponse) error {
	if !a.srv.config.ACLEnabled {
		return nil
	}
	if done, err := a.srv.forwardQuery("ACL.ResolveToken", &args.QueryOptions, args, reply); done {
		return err
	}
	reply.Enabled = true
	st := a.srv.State()
	_, token, err := resolveToken(st, a.srv.aclCache, args.AuthToken, a.srv.clock.Now())
	if err != nil {
		return err
	}
	reply.Token = token
	names := []string{structs.AnonymousPolicyName}
	if token != nil {
		names = token.Policies
	}
	for _, name := range names {
		p, err := st.ACLPolicyByName(nil, name)
		if err != nil {
			return err
		}
		if p != nil {
			reply.Policies = append(reply.Policies, p)
		}
	}
	idx, err := tableIndex(st, state.TableACLTokens, state.TableACLPolicies)
	reply.Index = max(idx, 1)
	return err
}
