package structs

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

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
	NodeName string `json:"nomad_node_name,omitempty"`
	NodePool string `json:"nomad_node_pool,omitempty"`
	// TLSCAFingerprint, in an introduction token of a tls.auto cluster,
	// is the SHA-256 of the active cluster CA (hex): a new node reads it
	// from its token and pins the servers by it before it holds the CA.
	TLSCAFingerprint string   `json:"nomad_tls_ca_sha256,omitempty"`
	Subject          string   `json:"sub"`
	Audience         []string `json:"aud,omitempty"`
	IssuedAt         int64    `json:"iat"`
	NotBefore        int64    `json:"nbf"`
	Expiry           int64    `json:"exp,omitempty"`
	ID               string   `json:"jti"`
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
	// IdentityName names one of the task's named identities; "" (what
	// a client that predates them sends) is the default one.
	IdentityName string `json:",omitempty"`
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

// JWT is a compact JWT taken apart, its signature not checked: the
// servers check it against the root key its KeyID names; a client only
// reads claims of a token it was handed (an introduction token's CA
// fingerprint, which the servers will check when it is presented).
type JWT struct {
	Algorithm string
	KeyID     string
	Claims    *IdentityClaims
	// Signed is the part the signature covers, and Signature the
	// signature's bytes.
	Signed    string
	Signature []byte
}

// ErrNotJWT is why DecodeJWT refuses a token.
var ErrNotJWT = errors.New("not a JWT")

// DecodeJWT takes a compact JWT apart (RFC 7519: header, claims and
// signature, base64url without padding).
func DecodeJWT(token string) (*JWT, error) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return nil, fmt.Errorf("%w: %d parts, not 3", ErrNotJWT, len(parts))
	}
	b64 := base64.RawURLEncoding
	hb, err := b64.DecodeString(parts[0])
	if err != nil {
		return nil, fmt.Errorf("%w: header: %w", ErrNotJWT, err)
	}
	var header struct{ Alg, Kid string }
	if err := json.Unmarshal(hb, &header); err != nil {
		return nil, fmt.Errorf("%w: header: %w", ErrNotJWT, err)
	}
	cb, err := b64.DecodeString(parts[1])
	if err != nil {
		return nil, fmt.Errorf("%w: claims: %w", ErrNotJWT, err)
	}
	var c IdentityClaims
	if err := json.Unmarshal(cb, &c); err != nil {
		return nil, fmt.Errorf("%w: claims: %w", ErrNotJWT, err)
	}
	sig, err := b64.DecodeString(parts[2])
	if err != nil {
		return nil, fmt.Errorf("%w: signature: %w", ErrNotJWT, err)
	}
	return &JWT{Algorithm: header.Alg, KeyID: header.Kid, Claims: &c, Signed: parts[0] + "." + parts[1], Signature: sig}, nil
}
