package agent

import (
	"fmt"
	"net/http"

	"github.com/hashicorp/nomad/api"

	"github.com/nomad-edge/nomad/acl"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// tokenHeader carries the caller's ACL secret, as upstream. There is no
// ?token= parameter: secrets in URLs end up in logs.
const tokenHeader = "X-Nomad-Token"

// requestToken is the request's ACL secret, or "".
func requestToken(r *http.Request) string { return r.Header.Get(tokenHeader) }

// authorize is the check of the endpoints the agent answers itself
// (agent, parse): it asks the servers what the caller's token holds and
// refuses, naming what was missing, when allow says no.
//
// An agent without acl.enabled asks nothing: its own endpoints then
// answer without a server, as they did before ACLs.
func (s *HTTPServer) authorize(r *http.Request, allow func(*acl.ACL) bool, what string) error {
	a, err := s.resolveACL(r)
	if err != nil {
		return err
	}
	return refuseUnless(r, allow(a), what)
}

// resolveACL asks the servers what the caller's token holds: nil (anything)
// when ACLs are off.
func (s *HTTPServer) resolveACL(r *http.Request) (*acl.ACL, error) {
	if !s.aclEnabled() {
		return nil, nil
	}
	var resp structs.ResolveACLTokenResponse
	if err := s.call(r, "ACL.ResolveToken", &structs.ResolveACLTokenRequest{}, &resp); err != nil {
		return nil, err
	}
	if !resp.Enabled {
		return nil, nil
	}
	if resp.Token != nil && resp.Token.IsManagement() {
		return acl.ManagementACL, nil
	}
	var policies []*acl.Policy
	for _, p := range resp.Policies {
		if parsed, err := acl.Parse(p.Name, p.Rules); err == nil {
			policies = append(policies, parsed)
		}
	}
	return acl.NewACL(policies), nil
}

// refuseUnless is the refusal of a caller that lacks what, naming it.
func refuseUnless(r *http.Request, allowed bool, what string) error {
	if allowed {
		return nil
	}
	if requestToken(r) == "" {
		return fmt.Errorf("%w: no ACL token given (set X-Nomad-Token, NOMAD_TOKEN or -token), and anonymous requests lack %s",
			structs.ErrPermissionDenied, what)
	}
	return fmt.Errorf("%w: token lacks %s", structs.ErrPermissionDenied, what)
}

func (s *HTTPServer) aclEnabled() bool {
	return s.agent != nil && s.agent.config != nil && s.agent.config.ACL != nil && s.agent.config.ACL.Enabled
}

// aclBootstrapBody is upstream's ACLTokenBootstrapRequest; the body is
// optional.
type aclBootstrapBody struct {
	BootstrapSecret string
	api.WriteRequest
}

// aclBootstrap is POST /v1/acl/bootstrap: the first management token, its
// secret the body's BootstrapSecret when one is given.
func (s *HTTPServer) aclBootstrap(w http.ResponseWriter, r *http.Request) (any, error) {
	var body aclBootstrapBody
	if err := decodeOptionalBody(r, &body); err != nil {
		return nil, err
	}
	args := &structs.ACLTokenBootstrapRequest{BootstrapSecret: body.BootstrapSecret, WriteRequest: writeRequest(r)}
	var reply structs.ACLTokenUpsertResponse
	if err := s.call(r, "ACL.Bootstrap", args, &reply); err != nil {
		return nil, err
	}
	setIndex(w, reply.Index)
	return reply.Tokens[0], nil
}

// aclPolicies is GET /v1/acl/policies.
func (s *HTTPServer) aclPolicies(w http.ResponseWriter, r *http.Request) (any, error) {
	args := &structs.ACLPolicyListRequest{}
	var reply structs.ACLPolicyListResponse
	c := readCall{"ACL.ListPolicies", &args.QueryOptions, args, &reply, &reply.QueryMeta}
	return listQuery(s, w, r, c, func() []*structs.ACLPolicyListStub { return reply.Policies }, byID(func(p *structs.ACLPolicyListStub) string { return p.Name }))
}

// aclPolicyGet is GET /v1/acl/policy/{name}.
func (s *HTTPServer) aclPolicyGet(w http.ResponseWriter, r *http.Request) (any, error) {
	args := &structs.ACLPolicySpecificRequest{Name: r.PathValue("name")}
	var reply structs.ACLPolicySingleResponse
	if err := s.query(w, r, readCall{"ACL.GetPolicy", &args.QueryOptions, args, &reply, &reply.QueryMeta}); err != nil {
		return nil, err
	}
	if reply.Policy == nil {
		return nil, codedErrorf(http.StatusNotFound, "ACL policy not found")
	}
	return reply.Policy, nil
}

// aclPolicyPut is POST /v1/acl/policy/{name}: create or update.
func (s *HTTPServer) aclPolicyPut(w http.ResponseWriter, r *http.Request) (any, error) {
	var body api.ACLPolicy
	if err := decodeBody(r, &body); err != nil {
		return nil, err
	}
	name := r.PathValue("name")
	if body.Name != "" && body.Name != name {
		return nil, codedErrorf(http.StatusBadRequest, "Policy name does not match the path: %q", name)
	}
	args := &structs.ACLPolicyUpsertRequest{
		Policies:     []*structs.ACLPolicy{{Name: name, Description: body.Description, Rules: body.Rules, JobACL: (*structs.JobACL)(body.JobACL)}},
		WriteRequest: writeRequest(r),
	}
	var reply structs.GenericResponse
	if err := s.call(r, "ACL.UpsertPolicies", args, &reply); err != nil {
		return nil, err
	}
	setIndex(w, reply.Index)
	return nil, nil
}

// aclPolicyDelete is DELETE /v1/acl/policy/{name}.
func (s *HTTPServer) aclPolicyDelete(w http.ResponseWriter, r *http.Request) (any, error) {
	args := &structs.ACLPolicyDeleteRequest{Names: []string{r.PathValue("name")}, WriteRequest: writeRequest(r)}
	var reply structs.GenericResponse
	if err := s.call(r, "ACL.DeletePolicies", args, &reply); err != nil {
		return nil, err
	}
	setIndex(w, reply.Index)
	return nil, nil
}

// aclTokens is GET /v1/acl/tokens.
func (s *HTTPServer) aclTokens(w http.ResponseWriter, r *http.Request) (any, error) {
	args := &structs.ACLTokenListRequest{}
	var reply structs.ACLTokenListResponse
	c := readCall{"ACL.ListTokens", &args.QueryOptions, args, &reply, &reply.QueryMeta}
	return listQuery(s, w, r, c, func() []*structs.ACLTokenListStub { return reply.Tokens }, tokenOrder)
}

// aclTokenGet is GET /v1/acl/token/{id}.
func (s *HTTPServer) aclTokenGet(w http.ResponseWriter, r *http.Request) (any, error) {
	args := &structs.ACLTokenSpecificRequest{AccessorID: r.PathValue("id")}
	var reply structs.ACLTokenSingleResponse
	if err := s.query(w, r, readCall{"ACL.GetToken", &args.QueryOptions, args, &reply, &reply.QueryMeta}); err != nil {
		return nil, err
	}
	if reply.Token == nil {
		return nil, codedErrorf(http.StatusNotFound, "ACL token not found")
	}
	return reply.Token, nil
}

// anonymousToken is what /v1/acl/token/self answers a caller without a
// token, in upstream's shape.
var anonymousToken = &structs.ACLToken{
	AccessorID: "anonymous", Name: "Anonymous Token", Type: structs.ACLClientToken,
	Policies: []string{structs.AnonymousPolicyName}, Global: false,
}

// aclTokenSelf is GET /v1/acl/token/self: the caller's own token.
func (s *HTTPServer) aclTokenSelf(w http.ResponseWriter, r *http.Request) (any, error) {
	args := &structs.ResolveACLTokenRequest{}
	var reply structs.ResolveACLTokenResponse
	if err := s.query(w, r, readCall{"ACL.ResolveToken", &args.QueryOptions, args, &reply, &reply.QueryMeta}); err != nil {
		return nil, err
	}
	if !reply.Enabled {
		return nil, structs.ErrACLDisabled
	}
	if reply.Token == nil {
		return anonymousToken, nil
	}
	return reply.Token, nil
}

// aclTokenPut is POST /v1/acl/token (create) and /v1/acl/token/{id}
// (update).
func (s *HTTPServer) aclTokenPut(w http.ResponseWriter, r *http.Request) (any, error) {
	var body api.ACLToken
	if err := decodeBody(r, &body); err != nil {
		return nil, err
	}
	id := r.PathValue("id")
	if id != "" && body.AccessorID != "" && body.AccessorID != id {
		return nil, codedErrorf(http.StatusBadRequest, "Token accessor ID does not match the path: %q", id)
	}
	args := &structs.ACLTokenUpsertRequest{
		Tokens: []*structs.ACLToken{{
			AccessorID: id, Name: body.Name, Type: body.Type, Policies: body.Policies, Global: body.Global,
			ExpirationTime: body.ExpirationTime, ExpirationTTL: body.ExpirationTTL,
		}},
		WriteRequest: writeRequest(r),
	}
	var reply structs.ACLTokenUpsertResponse
	if err := s.call(r, "ACL.UpsertTokens", args, &reply); err != nil {
		return nil, err
	}
	setIndex(w, reply.Index)
	return reply.Tokens[0], nil
}

// aclOneTimeToken is PUT|POST /v1/acl/token/onetime: a one-time token
// for the caller's token, {"OneTimeToken": {...}} as upstream answers.
func (s *HTTPServer) aclOneTimeToken(w http.ResponseWriter, r *http.Request) (any, error) {
	args := &structs.OneTimeTokenUpsertRequest{WriteRequest: writeRequest(r)}
	var reply structs.OneTimeTokenUpsertResponse
	if err := s.call(r, "ACL.UpsertOneTimeToken", args, &reply); err != nil {
		return nil, err
	}
	setIndex(w, reply.Index)
	return struct{ OneTimeToken *structs.OneTimeToken }{reply.OneTimeToken}, nil
}

// aclOneTimeExchange is PUT|POST /v1/acl/token/onetime/exchange: body
// {OneTimeSecretID}, answer {"Token": {...}}, once per one-time token.
func (s *HTTPServer) aclOneTimeExchange(w http.ResponseWriter, r *http.Request) (any, error) {
	var body struct {
		OneTimeSecretID string
		api.WriteRequest
	}
	if err := decodeBody(r, &body); err != nil {
		return nil, err
	}
	args := &structs.OneTimeTokenExchangeRequest{OneTimeSecretID: body.OneTimeSecretID, WriteRequest: writeRequest(r)}
	var reply structs.OneTimeTokenExchangeResponse
	if err := s.call(r, "ACL.ExchangeOneTimeToken", args, &reply); err != nil {
		return nil, err
	}
	setIndex(w, reply.Index)
	return struct{ Token *structs.ACLToken }{reply.Token}, nil
}

// aclTokenDelete is DELETE /v1/acl/token/{id}.
func (s *HTTPServer) aclTokenDelete(w http.ResponseWriter, r *http.Request) (any, error) {
	args := &structs.ACLTokenDeleteRequest{AccessorIDs: []string{r.PathValue("id")}, WriteRequest: writeRequest(r)}
	var reply structs.GenericResponse
	if err := s.call(r, "ACL.DeleteTokens", args, &reply); err != nil {
		return nil, err
	}
	setIndex(w, reply.Index)
	return nil, nil
}
