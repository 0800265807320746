package structs

import "time"

// DefaultWorkloadIdentityTTL is how long a signed workload identity lives.
const DefaultWorkloadIdentityTTL = time.Hour

// IdentityClaims are a workload identity's JWT claims: upstream's nomad_*
// claims and the registered ones. Times are Unix seconds.
type IdentityClaims struct {
	Namespace    string `json:"nomad_namespace"`
	JobID        string `json:"nomad_job_id"`
	TaskGroup    string `json:"nomad_task_group,omitempty"`
	AllocationID string `json:"nomad_allocation_id"`
	TaskName     string `json:"nomad_task,omitempty"`
	// NodeName and NodePool scope a client introduction token (see
	// node_intro.go); empty in workload identities.
	NodeName  string   `json:"nomad_node_name,omitempty"`
	NodePool  string   `json:"nomad_node_pool,omitempty"`
	Subject   string   `json:"sub"`
	Audience  []string `json:"aud,omitempty"`
	IssuedAt  int64    `json:"iat"`
	NotBefore int64    `json:"nbf"`
	Expiry    int64    `json:"exp,omitempty"`
	ID        string   `json:"jti"`
}

// JSONWebKey is one public signing key as /.well-known/jwks.json
// publishes it (RFC 8037: an Ed25519 key is kty OKP, crv Ed25519).
type JSONWebKey struct {
	KeyID     string `json:"kid"`
	KeyType   string `json:"kty"`
	Curve     string `json:"crv"`
	X         string `json:"x"`
	Use       string `json:"use"`
	Algorithm string `json:"alg"`
}

// KeyringListPublicResponse is the public keys workload identities are
// signed with.
type KeyringListPublicResponse struct {
	PublicKeys []*JSONWebKey
	QueryMeta
}

// WorkloadIdentityRequest names the task whose identity a client asks for.
type WorkloadIdentityRequest struct {
	AllocID  string
	TaskName string
}

// AllocIdentitiesRequest is a client asking the servers to sign the
// identities of tasks of allocations on its node; AuthToken is the node's
// secret.
type AllocIdentitiesRequest struct {
	Identities []*WorkloadIdentityRequest
	QueryOptions
}

// SignedWorkloadIdentity is one task's signed identity.
type SignedWorkloadIdentity struct {
	WorkloadIdentityRequest
	JWT        string
	Expiration time.Time
}

// WorkloadIdentityRejection says why an identity was not signed (the
// allocation is gone, terminal, not the node's, or has no such task).
type WorkloadIdentityRejection struct {
	WorkloadIdentityRequest
	Reason string
}

// AllocIdentitiesResponse is the identities signed and those refused.
type AllocIdentitiesResponse struct {
	SignedIdentities []*SignedWorkloadIdentity
	Rejections       []*WorkloadIdentityRejection
	QueryMeta
}
