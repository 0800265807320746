package api

import (
	"errors"
	"net/http"
	"time"
)

// ACLToken is an ACL token in upstream's shape. SecretID is the
// credential; AccessorID names the token.
type ACLToken struct {
	AccessorID string
	SecretID   string
	Name       string
	Type       string
	Policies   []string
	Global     bool
	CreateTime time.Time
	// ExpirationTime or ExpirationTTL (from creation) make the token stop
	// working then; fixed when the token is created.
	ExpirationTime *time.Time    `json:",omitempty"`
	ExpirationTTL  time.Duration `json:",omitempty"`
	CreateIndex    uint64
	ModifyIndex    uint64
}

// ACLTokenListStub is a token in a list, without its secret.
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

// ACLPolicy is a named set of rules.
type ACLPolicy struct {
	Name        string
	Description string
	Rules       string
	// JobACL attaches the policy to the workload identities of a job, a
	// group of it or a task.
	JobACL      *JobACL
	CreateIndex uint64
	ModifyIndex uint64
}

// JobACL names the workloads a policy is attached to.
type JobACL struct {
	Namespace string
	JobID     string
	Group     string
	Task      string
}

// ACLPolicyListStub is a policy in a list, without its rules.
type ACLPolicyListStub struct {
	Name        string
	Description string
	CreateIndex uint64
	ModifyIndex uint64
}

// ACLTokens is the handle on /v1/acl/token* and /v1/acl/bootstrap.
type ACLTokens struct {
	client *Client
}

// ACLTokens returns the handle on ACL tokens.
func (c *Client) ACLTokens() *ACLTokens { return &ACLTokens{client: c} }

// Bootstrap makes the first management token; it works once per cluster.
func (a *ACLTokens) Bootstrap(w *WriteOptions) (*ACLToken, *WriteMeta, error) {
	return a.BootstrapOpts("", w)
}

// BootstrapOpts is Bootstrap with the token's secret chosen by the caller
// (a UUID; "" lets the servers pick one).
func (a *ACLTokens) BootstrapOpts(secret string, w *WriteOptions) (*ACLToken, *WriteMeta, error) {
	var body any
	if secret != "" {
		body = struct{ BootstrapSecret string }{secret}
	}
	var out ACLToken
	wm, err := a.client.write(http.MethodPost, "/v1/acl/bootstrap", body, &out, w)
	if err != nil {
		return nil, nil, err
	}
	return &out, wm, nil
}

// List lists tokens (management tokens only).
func (a *ACLTokens) List(q *QueryOptions) ([]*ACLTokenListStub, *QueryMeta, error) {
	var out []*ACLTokenListStub
	qm, err := a.client.query("/v1/acl/tokens", &out, q)
	return out, qm, err
}

// Create makes a token; the answer carries its accessor and secret.
func (a *ACLTokens) Create(t *ACLToken, w *WriteOptions) (*ACLToken, *WriteMeta, error) {
	if t.AccessorID != "" {
		return nil, nil, errors.New("cannot specify Accessor ID")
	}
	var out ACLToken
	wm, err := a.client.write(http.MethodPost, "/v1/acl/token", t, &out, w)
	if err != nil {
		return nil, nil, err
	}
	return &out, wm, nil
}

// Info reads a token by accessor ID.
func (a *ACLTokens) Info(accessorID string, q *QueryOptions) (*ACLToken, *QueryMeta, error) {
	var out ACLToken
	qm, err := a.client.query("/v1/acl/token/"+pathID(accessorID), &out, q)
	if err != nil {
		return nil, nil, err
	}
	return &out, qm, nil
}

// Self reads the caller's own token.
func (a *ACLTokens) Self(q *QueryOptions) (*ACLToken, *QueryMeta, error) {
	var out ACLToken
	qm, err := a.client.query("/v1/acl/token/self", &out, q)
	if err != nil {
		return nil, nil, err
	}
	return &out, qm, nil
}

// Delete deletes a token by accessor ID.
func (a *ACLTokens) Delete(accessorID string, w *WriteOptions) (*WriteMeta, error) {
	return a.client.write(http.MethodDelete, "/v1/acl/token/"+pathID(accessorID), nil, nil, w)
}

// ACLPolicies is the handle on /v1/acl/polic*.
type ACLPolicies struct {
	client *Client
}

// ACLPolicies returns the handle on ACL policies.
func (c *Client) ACLPolicies() *ACLPolicies { return &ACLPolicies{client: c} }

// List lists the policies the caller may read.
func (a *ACLPolicies) List(q *QueryOptions) ([]*ACLPolicyListStub, *QueryMeta, error) {
	var out []*ACLPolicyListStub
	qm, err := a.client.query("/v1/acl/policies", &out, q)
	return out, qm, err
}

// Upsert creates or updates a policy.
func (a *ACLPolicies) Upsert(p *ACLPolicy, w *WriteOptions) (*WriteMeta, error) {
	if p == nil || p.Name == "" {
		return nil, errors.New("missing policy name")
	}
	return a.client.write(http.MethodPost, "/v1/acl/policy/"+pathID(p.Name), p, nil, w)
}

// Info reads a policy.
func (a *ACLPolicies) Info(name string, q *QueryOptions) (*ACLPolicy, *QueryMeta, error) {
	var out ACLPolicy
	qm, err := a.client.query("/v1/acl/policy/"+pathID(name), &out, q)
	if err != nil {
		return nil, nil, err
	}
	return &out, qm, nil
}

// Delete deletes a policy.
func (a *ACLPolicies) Delete(name string, w *WriteOptions) (*WriteMeta, error) {
	return a.client.write(http.MethodDelete, "/v1/acl/policy/"+pathID(name), nil, nil, w)
}
