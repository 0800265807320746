package nomad

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nomad-edge/nomad/nomad/structs"
)

// Workload identities are JWTs signed with Ed25519 (alg EdDSA), as
// upstream's first ones were: each root key derives its signing key (the
// key is the seed, hashed with a label so the AES key itself never signs),
// so every server holding a root key signs and verifies alike and nothing
// more is replicated. The JWT's kid is the root key's ID; the public keys
// are published at /.well-known/jwks.json.

const (
	jwtAlg          = "EdDSA"
	jwtSigningLabel = "nomad-edge workload identity signing key "
)

// ErrInvalidIdentity refuses a workload identity that does not verify.
var ErrInvalidIdentity = fmt.Errorf("%w: invalid workload identity", structs.ErrPermissionDenied)

var b64 = base64.RawURLEncoding

// signingKey is the Ed25519 key root key id signs identities with.
func (e *encrypter) signingKey(id string) (ed25519.PrivateKey, error) {
	e.mu.RLock()
	defer e.mu.RUnlock()
	k := e.keys[id]
	if k == nil {
		return nil, fmt.Errorf("%w: %s is not (yet) on this server", structs.ErrUnknownRootKey, id)
	}
	seed := sha256.Sum256(append([]byte(jwtSigningLabel+id), k.root.Key...))
	return ed25519.NewKeyFromSeed(seed[:]), nil
}

// signClaims signs claims with root key id into a compact JWT.
func (e *encrypter) signClaims(id string, claims *structs.IdentityClaims) (string, error) {
	priv, err := e.signingKey(id)
	if err != nil {
		return "", err
	}
	header, err := json.Marshal(map[string]string{"alg": jwtAlg, "typ": "JWT", "kid": id})
	if err != nil {
		return "", err
	}
	body, err := json.Marshal(claims)
	if err != nil {
		return "", err
	}
	signed := b64.EncodeToString(header) + "." + b64.EncodeToString(body)
	return signed + "." + b64.EncodeToString(ed25519.Sign(priv, []byte(signed))), nil
}

// looksLikeJWT tells a workload identity from an ACL token's secret (a
// UUID, which has no dots).
func looksLikeJWT(s string) bool { return strings.Count(s, ".") == 2 }

// verifyClaims checks a JWT's signature against the root key its kid
// names and its time window at now, and returns its claims.
func (e *encrypter) verifyClaims(token string, now time.Time) (*structs.IdentityClaims, error) {
	jwt, err := structs.DecodeJWT(token)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidIdentity, err)
	}
	if jwt.Algorithm != jwtAlg || jwt.KeyID == "" {
		return nil, fmt.Errorf("%w: header must name alg %s and a kid", ErrInvalidIdentity, jwtAlg)
	}
	priv, err := e.signingKey(jwt.KeyID)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidIdentity, err)
	}
	if !ed25519.Verify(priv.Public().(ed25519.PublicKey), []byte(jwt.Signed), jwt.Signature) {
		return nil, fmt.Errorf("%w: bad signature", ErrInvalidIdentity)
	}
	c := jwt.Claims
	if n := now.Unix(); n < c.NotBefore || (c.Expiry != 0 && n >= c.Expiry) {
		return nil, fmt.Errorf("%w: expired or not yet valid", ErrInvalidIdentity)
	}
	return c, nil
}

// publicKeys are the public signing keys of every root key this server
// holds and raft names, for /.well-known/jwks.json.
func (s *Server) publicKeys() ([]*structs.JSONWebKey, uint64, error) {
	metas, err := s.State().RootKeyMetas(nil)
	if err != nil {
		return nil, 0, err
	}
	var index uint64
	out := []*structs.JSONWebKey{}
	for _, m := range metas {
		index = max(index, m.ModifyIndex)
		priv, err := s.encrypter.signingKey(m.KeyID)
		if errors.Is(err, structs.ErrUnknownRootKey) {
			continue // not copied here yet
		}
		if err != nil {
			return nil, 0, err
		}
		out = append(out, &structs.JSONWebKey{
			KeyID: m.KeyID, KeyType: "OKP", Curve: "Ed25519", Use: "sig", Algorithm: jwtAlg,
			X: b64.EncodeToString(priv.Public().(ed25519.PublicKey)),
		})
	}
	return out, index, nil
}

// signIdentity signs the identity of a task of alloc with the active key.
func (s *Server) signIdentity(alloc *structs.Allocation, task, name string) (*structs.SignedWorkloadIdentity, error) {
	active, err := s.State().ActiveRootKeyMeta(nil)
	if err != nil {
		return nil, err
	}
	if active == nil {
		return nil, fmt.Errorf("%w: the keyring has no active root key yet", structs.ErrUnknownRootKey)
	}
	now := s.clock.Now()
	spec := taskIdentity(alloc, task, name)
	audience := []string{structs.WorkloadIdentityAudience}
	if name == "" {
		name = structs.WorkloadIdentityDefaultName
	}
	if !spec.IsDefault() {
		audience = slices.Clone(spec.Audience)
	}
	exp := now.Add(spec.IdentityTTL())
	claims := &structs.IdentityClaims{
		Namespace: alloc.Namespace, JobID: alloc.JobID, TaskGroup: alloc.TaskGroup, AllocationID: alloc.ID, TaskName: task,
		Subject:  strings.Join([]string{s.config.Region, alloc.Namespace, alloc.JobID, alloc.TaskGroup, task, name}, ":"),
		Audience: audience, IssuedAt: now.Unix(), NotBefore: now.Unix(), Expiry: exp.Unix(),
		ID: structs.GenerateUUID(),
	}
	jwt, err := s.encrypter.signClaims(active.KeyID, claims)
	if err != nil {
		return nil, err
	}
	return &structs.SignedWorkloadIdentity{
		WorkloadIdentityRequest: structs.WorkloadIdentityRequest{AllocID: alloc.ID, TaskName: task, IdentityName: identityRequestName(name)},
		JWT:                     jwt, Expiration: exp,
	}, nil
}

// taskIdentity is the identity block of the allocation's task that name
// names ("" or "default": the default one, which may be nil), nil when
// the task has no such named block.
func taskIdentity(alloc *structs.Allocation, task, name string) *structs.WorkloadIdentity {
	tg := alloc.LookupTaskGroup()
	if tg == nil {
		return nil
	}
	t := tg.LookupTask(task)
	if t == nil {
		return nil
	}
	if name == "" || name == structs.WorkloadIdentityDefaultName {
		return t.Identity
	}
	for _, w := range t.Identities {
		if w.Name == name {
			return w
		}
	}
	return nil
}

// identityRequestName is how a request names the identity: "" for the
// default one, as a client that predates named identities sends it.
func identityRequestName(name string) string {
	if name == structs.WorkloadIdentityDefaultName {
		return ""
	}
	return name
}
