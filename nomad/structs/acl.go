package structs

import (
	"errors"
	"fmt"
	"regexp"
	"time"
)

// ACL token types, as upstream.
const (
	ACLClientToken     = "client"
	ACLManagementToken = "management"
)

// AnonymousPolicyName is the policy a request without a token gets, when
// an operator has written one (upstream's convention).
const AnonymousPolicyName = "anonymous"

// ACL errors. Their texts are upstream's where it has one.
var (
	ErrACLDisabled = errors.New("ACL support disabled")
	// ErrTokenNotFound answers a secret no token has: a 403, as upstream,
	// so a guessed secret learns nothing a missing one would not.
	ErrTokenNotFound = fmt.Errorf("%w: ACL token not found", ErrPermissionDenied)
	// ErrACLBootstrapped refuses a second bootstrap: the first token is
	// made once, and further ones by a management token.
	ErrACLBootstrapped = fmt.Errorf("%w: ACL bootstrap already done", ErrInvalidRequest)
	// ErrTokenExpired refuses a token past its ExpirationTime: a 403, as
	// upstream's "ACL token expired".
	ErrTokenExpired     = fmt.Errorf("%w: ACL token expired", ErrPermissionDenied)
	ErrUnknownACLToken  = errors.New("ACL token not found by accessor")
	ErrUnknownACLPolicy = errors.New("ACL policy not found")
)

// ACLToken is a credential: its SecretID authenticates a request, its
// AccessorID names it in lists and logs. A management token may do
// anything; a client token what its policies allow.
type ACLToken struct {
	AccessorID string
	SecretID   string
	Name       string
	Type       string
	Policies   []string
	Global     bool
	CreateTime time.Time
	// ExpirationTime, when set, is when the token stops working; it is
	// fixed at creation (from ExpirationTTL, the TTL asked for, when that
	// is what the request gave).
	ExpirationTime *time.Time    `json:",omitempty"`
	ExpirationTTL  time.Duration `json:",omitempty"`
	CreateIndex    uint64
	ModifyIndex    uint64
}

// Token expiration bounds: upstream's defaults for acl.token_min_expiration_ttl
// and acl.token_max_expiration_ttl, which this version does not let an
// operator change.
const (
	MinTokenExpirationTTL = time.Minute
	MaxTokenExpirationTTL = 24 * time.Hour
)

// IsManagement reports whether the token may do anything.
func (t *ACLToken) IsManagement() bool { return t.Type == ACLManagementToken }

// IsExpired reports whether the token has an expiration time at or
// before now.
func (t *ACLToken) IsExpired(now time.Time) bool {
	return t.ExpirationTime != nil && !t.ExpirationTime.After(now)
}

// SetExpiration fixes a new token's ExpirationTime from its ExpirationTTL
// (now + TTL) and checks it lies between MinTokenExpirationTTL and
// MaxTokenExpirationTTL from now, as upstream; a token that sets neither
// never expires.
func (t *ACLToken) SetExpiration(now time.Time) error {
	switch {
	case t.ExpirationTTL < 0:
		return fmt.Errorf("token expiration TTL %s is negative", t.ExpirationTTL)
	case t.ExpirationTTL > 0 && t.ExpirationTime != nil:
		return errors.New("token sets both ExpirationTime and ExpirationTTL; set one")
	case t.ExpirationTTL > 0:
		at := now.Add(t.ExpirationTTL)
		t.ExpirationTime = &at
	case t.ExpirationTime == nil:
		return nil
	}
	ttl := t.ExpirationTime.Sub(now)
	if ttl < MinTokenExpirationTTL {
		return fmt.Errorf("expiration time cannot be less than %s in the future", MinTokenExpirationTTL)
	}
	if ttl > MaxTokenExpirationTTL {
		return fmt.Errorf("expiration time cannot be more than %s in the future", MaxTokenExpirationTTL)
	}
	return nil
}

// Stub is the token without its secret, for lists.
func (t *ACLToken) Stub() *ACLTokenListStub {
	return &ACLTokenListStub{
		AccessorID: t.AccessorID, Name: t.Name, Type: t.Type, Policies: t.Policies,
		Global: t.Global, CreateTime: t.CreateTime, ExpirationTime: t.ExpirationTime,
		CreateIndex: t.CreateIndex, ModifyIndex: t.ModifyIndex,
	}
}

// Validate checks a token an operator asks to create or update.
func (t *ACLToken) Validate() error {
	var p problems
	if len(t.Name) > 256 {
		p.add("token name longer than 256 characters")
	}
	switch t.Type {
	case ACLClientToken:
		if len(t.Policies) == 0 {
			p.add("client token missing policies")
		}
	case ACLManagementToken:
		if len(t.Policies) != 0 {
			p.add("management token cannot be associated with policies")
		}
	default:
		p.add("token type must be %q or %q, not %q", ACLClientToken, ACLManagementToken, t.Type)
	}
	return p.err()
}

// OneTimeTokenTTL is how long a one-time token may be exchanged, as
// upstream's.
const OneTimeTokenTTL = 10 * time.Minute

// OneTimeToken stands for the ACL token AccessorID names until it is
// exchanged (once) or ExpiresAt passes: a secret that can be handed to a
// person or a browser without handing over the token itself (upstream's
// `nomad ui -authenticate`).
type OneTimeToken struct {
	OneTimeSecretID string
	AccessorID      string
	ExpiresAt       time.Time
	CreateIndex     uint64
	ModifyIndex     uint64
}

// ErrOneTimeTokenInvalid refuses an exchange of a secret that names no
// live one-time token (never made, used already, expired, or its ACL
// token deleted): a 403 that tells these apart for no one.
var ErrOneTimeTokenInvalid = fmt.Errorf("%w: one-time token not found or expired", ErrPermissionDenied)

// OneTimeTokenUpsertRequest stores a one-time token; Expired lists the
// secrets of the ones past their time, deleted in the same entry.
type OneTimeTokenUpsertRequest struct {
	OneTimeToken *OneTimeToken
	Expired      []string
	WriteRequest
}

// OneTimeTokenUpsertResponse answers ACL.UpsertOneTimeToken.
type OneTimeTokenUpsertResponse struct {
	OneTimeToken *OneTimeToken
	WriteMeta
}

// OneTimeTokenExchangeRequest trades a one-time secret for its ACL token.
type OneTimeTokenExchangeRequest struct {
	OneTimeSecretID string
	WriteRequest
}

// OneTimeTokenExchangeResponse carries the ACL token an exchange gave.
type OneTimeTokenExchangeResponse struct {
	Token *ACLToken
	WriteMeta
}

// OneTimeTokenDeleteRequest deletes one-time tokens by secret (an
// exchange deletes the one it used).
type OneTimeTokenDeleteRequest struct {
	OneTimeSecretIDs []string
	WriteRequest
}

// ACLTokenListStub is a token in a list: everything but the secret.
type ACLTokenListStub struct {
	AccessorID     string
	Name           string
	Type           string
	Policies       []string
	Global         bool
	CreateTime     time.Time
	ExpirationTime *time.Time `json:",omitempty"`
	CreateIndex    uint64
	ModifyIndex    uint64
}

// ACLPolicy is a named set of rules in the policy language (package acl).
type ACLPolicy struct {
	Name        string
	Description string
	Rules       string
	// JobACL, when set, attaches the policy to workloads: the identities
	// of the tasks it names get its rules on top of their implicit
	// policy, as upstream's workload-associated policies.
	JobACL      *JobACL
	CreateIndex uint64
	ModifyIndex uint64
}

// JobACL names the workloads a policy is attached to: every task of a
// job, of one of its groups, or one task. Empty fields widen the match;
// a narrower field needs the wider ones (a task needs its group, a group
// its job, a job its namespace).
type JobACL struct {
	Namespace string
	JobID     string
	Group     string
	Task      string
}

// Matches says whether a task's identity (namespace, job, group, task)
// is one the policy is attached to.
func (j *JobACL) Matches(ns, job, group, task string) bool {
	return j != nil && j.Namespace == ns && j.JobID == job &&
		(j.Group == "" || j.Group == group) && (j.Task == "" || j.Task == task)
}

// Stub is the policy without its rules, for lists.
func (p *ACLPolicy) Stub() *ACLPolicyListStub {
	return &ACLPolicyListStub{Name: p.Name, Description: p.Description, CreateIndex: p.CreateIndex, ModifyIndex: p.ModifyIndex}
}

var validPolicyName = regexp.MustCompile(`^[a-zA-Z0-9-]{1,128}$`)

// Validate checks a policy's name (upstream's rule: letters, digits
// and dashes, at most 128), its description and its JobACL.
func (p *ACLPolicy) Validate() error {
	if !validPolicyName.MatchString(p.Name) {
		return fmt.Errorf("%w: invalid policy name %q: use 1 to 128 letters, digits and dashes", ErrInvalidRequest, p.Name)
	}
	if len(p.Description) > 256 {
		return fmt.Errorf("%w: policy %q: description longer than 256 characters", ErrInvalidRequest, p.Name)
	}
	return p.validateJobACL()
}

// validateJobACL refuses a workload match with a narrow field but not the
// wider ones it needs; an empty JobACL is no attachment and is dropped.
func (p *ACLPolicy) validateJobACL() error {
	j := p.JobACL
	if j == nil {
		return nil
	}
	if *j == (JobACL{}) {
		p.JobACL = nil
		return nil
	}
	for _, need := range []struct {
		set      bool
		field    string
		required string
		missing  bool
	}{
		{j.Task != "", "Task", "Group", j.Group == ""},
		{j.Group != "", "Group", "JobID", j.JobID == ""},
		{j.JobID != "", "JobID", "Namespace", j.Namespace == ""},
		{j.Namespace != "", "Namespace", "JobID", j.JobID == ""},
	} {
		if need.set && need.missing {
			return fmt.Errorf("%w: policy %q: JobACL.%s needs JobACL.%s", ErrInvalidRequest, p.Name, need.field, need.required)
		}
	}
	return nil
}

// ACLPolicyListStub is a policy in a list.
type ACLPolicyListStub struct {
	Name        string
	Description string
	CreateIndex uint64
	ModifyIndex uint64
}

// ACLTokenBootstrapRequest makes the first management token. The endpoint
// fills Token (secrets and time) before the request goes through raft.
type ACLTokenBootstrapRequest struct {
	Token *ACLToken
	// BootstrapSecret, when set, is the SecretID the operator chose for
	// the bootstrap token (a UUID), as upstream's.
	BootstrapSecret string
	WriteRequest
}

// ACLTokenUpsertRequest creates or updates tokens.
type ACLTokenUpsertRequest struct {
	Tokens []*ACLToken
	WriteRequest
}

// ACLTokenUpsertResponse returns the tokens as stored, secrets included.
type ACLTokenUpsertResponse struct {
	Tokens []*ACLToken
	WriteMeta
}

// ACLTokenDeleteRequest deletes tokens by accessor ID.
type ACLTokenDeleteRequest struct {
	AccessorIDs []string
	WriteRequest
}

// ACLTokenSpecificRequest reads one token by accessor ID.
type ACLTokenSpecificRequest struct {
	AccessorID string
	QueryOptions
}

// ACLTokenSingleResponse is one token, or nil.
type ACLTokenSingleResponse struct {
	Token *ACLToken
	QueryMeta
}

// ACLTokenListRequest lists tokens.
type ACLTokenListRequest struct {
	QueryOptions
}

// ACLTokenListResponse is a list of tokens without their secrets.
type ACLTokenListResponse struct {
	Tokens []*ACLTokenListStub
	QueryMeta
}

// ResolveACLTokenRequest asks what the caller's AuthToken may do: the
// agent's own endpoints (which make no RPC) check with it.
type ResolveACLTokenRequest struct {
	QueryOptions
}

// ResolveACLTokenResponse is the caller's token (nil for anonymous) and
// the policies it holds; Enabled is false when the servers run without
// ACLs.
type ResolveACLTokenResponse struct {
	Enabled  bool
	Token    *ACLToken
	Policies []*ACLPolicy
	QueryMeta
}

// ACLPolicyUpsertRequest creates or updates policies.
type ACLPolicyUpsertRequest struct {
	Policies []*ACLPolicy
	WriteRequest
}

// ACLPolicyDeleteRequest deletes policies by name.
type ACLPolicyDeleteRequest struct {
	Names []string
	WriteRequest
}

// ACLPolicySpecificRequest reads one policy by name.
type ACLPolicySpecificRequest struct {
	Name string
	QueryOptions
}

// ACLPolicySingleResponse is one policy, or nil.
type ACLPolicySingleResponse struct {
	Policy *ACLPolicy
	QueryMeta
}

// ACLPolicyListRequest lists policies.
type ACLPolicyListRequest struct {
	QueryOptions
}

// ACLPolicyListResponse is a list of policies without their rules.
type ACLPolicyListResponse struct {
	Policies []*ACLPolicyListStub
	QueryMeta
}
