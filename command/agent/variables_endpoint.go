package agent

import (
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/nomad-edge/nomad/nomad/structs"
)

// variableRoutes registers upstream's /v1/vars, /v1/var/:path and keyring
// endpoints.
func (s *HTTPServer) variableRoutes(handle func(string, handlerFunc)) {
	handle("GET /v1/vars", s.variableList)
	handle("GET /v1/var/{path...}", s.variableGet)
	handle("PUT /v1/var/{path...}", s.variablePut)
	handle("POST /v1/var/{path...}", s.variablePut)
	handle("DELETE /v1/var/{path...}", s.variableDelete)
	handle("GET /v1/operator/keyring/keys", s.keyringList)
	handle("PUT /v1/operator/keyring/rotate", s.keyringRotate)
	handle("POST /v1/operator/keyring/rotate", s.keyringRotate)
	handle("DELETE /v1/operator/keyring/key/{id}", s.keyringDelete)
	handle("GET /v1/operator/tls/ca", s.tlsCAList)
	handle("PUT /v1/operator/tls/ca/rotate", s.tlsCARotate)
	handle("POST /v1/operator/tls/ca/rotate", s.tlsCARotate)
	handle("GET /.well-known/jwks.json", s.jwks)
	handle("GET /.well-known/openid-configuration", s.openIDConfiguration)
}

// jwks publishes the public keys workload identities are signed with.
func (s *HTTPServer) jwks(w http.ResponseWriter, r *http.Request) (any, error) {
	args := &structs.GenericRequest{}
	var reply structs.KeyringListPublicResponse
	if err := s.query(w, r, readCall{"Keyring.ListPublic", &args.QueryOptions, args, &reply, &reply.QueryMeta}); err != nil {
		return nil, err
	}
	return struct {
		Keys []*structs.JSONWebKey `json:"keys"`
	}{nonNil(reply.PublicKeys)}, nil
}

// openIDConfiguration is the OIDC discovery document of the workload
// identities: the issuer is this agent's address, as upstream's default.
func (s *HTTPServer) openIDConfiguration(w http.ResponseWriter, r *http.Request) (any, error) {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	issuer := scheme + "://" + r.Host
	return map[string]any{
		"issuer":                                issuer,
		"jwks_uri":                              issuer + "/.well-known/jwks.json",
		"id_token_signing_alg_values_supported": []string{"EdDSA"},
		"response_types_supported":              []string{"code"},
		"subject_types_supported":               []string{"public"},
	}, nil
}

// variableLockJSON is a lock as upstream's API spells it: durations as
// strings ("15s").
type variableLockJSON struct {
	ID        string `json:",omitempty"`
	TTL       string `json:",omitempty"`
	LockDelay string `json:",omitempty"`
}

// variableMetaJSON is upstream's VariableMetadata.
type variableMetaJSON struct {
	Namespace   string
	Path        string
	CreateIndex uint64
	CreateTime  int64
	ModifyIndex uint64
	ModifyTime  int64
	Lock        *variableLockJSON `json:",omitempty"`
}

// variableJSON is upstream's Variable: the metadata and the items.
type variableJSON struct {
	Namespace   string
	Path        string
	CreateIndex uint64
	CreateTime  int64
	ModifyIndex uint64
	ModifyTime  int64
	Items       map[string]string
	Lock        *variableLockJSON `json:",omitempty"`
}

func lockJSON(l *structs.VariableLock) *variableLockJSON {
	if l == nil {
		return nil
	}
	return &variableLockJSON{ID: l.ID, TTL: l.TTL.String(), LockDelay: l.LockDelay.String()}
}

func variableMeta(m *structs.VariableMetadata) variableMetaJSON {
	return variableMetaJSON{
		Namespace: m.Namespace, Path: m.Path, CreateIndex: m.CreateIndex, CreateTime: m.CreateTime,
		ModifyIndex: m.ModifyIndex, ModifyTime: m.ModifyTime, Lock: lockJSON(m.Lock),
	}
}

func variableOut(v *structs.VariableDecrypted) *variableJSON {
	if v == nil {
		return nil
	}
	items := map[string]string(v.Items)
	if items == nil {
		items = map[string]string{}
	}
	return &variableJSON{
		Namespace: v.Namespace, Path: v.Path, CreateIndex: v.CreateIndex, CreateTime: v.CreateTime,
		ModifyIndex: v.ModifyIndex, ModifyTime: v.ModifyTime, Items: items, Lock: lockJSON(v.Lock),
	}
}

func (s *HTTPServer) variableList(w http.ResponseWriter, r *http.Request) (any, error) {
	args := &structs.VariablesListRequest{}
	var reply structs.VariablesListResponse
	c := readCall{"Variables.List", &args.QueryOptions, args, &reply, &reply.QueryMeta}
	items := func() []variableMetaJSON {
		out := make([]variableMetaJSON, 0, len(reply.Data))
		for _, m := range reply.Data {
			out = append(out, variableMeta(m))
		}
		return out
	}
	// Upstream's next token is namespace.path, whatever the namespace.
	return listQuery(s, w, r, c, items, byID(func(m variableMetaJSON) string { return m.Namespace + "." + m.Path }))
}

func (s *HTTPServer) variableGet(w http.ResponseWriter, r *http.Request) (any, error) {
	args := &structs.VariablesReadRequest{Path: r.PathValue("path")}
	var reply structs.VariablesReadResponse
	if err := s.query(w, r, readCall{"Variables.Read", &args.QueryOptions, args, &reply, &reply.QueryMeta}); err != nil {
		return nil, err
	}
	if reply.Data == nil {
		return nil, codedErrorf(http.StatusNotFound, "%s", structs.ErrVariableNotFound)
	}
	return variableOut(reply.Data), nil
}

// variableIn reads a PUT body: upstream's Variable, its lock durations as
// strings. The path comes from the URL; a body naming another path or
// namespace than the request is refused.
func variableIn(r *http.Request) (*structs.VariableDecrypted, error) {
	var body variableJSON
	if err := decodeOptionalBody(r, &body); err != nil {
		return nil, err
	}
	path := r.PathValue("path")
	if body.Path != "" && body.Path != path {
		return nil, codedErrorf(http.StatusBadRequest, "Variable path %q in the body does not match the URL path %q", body.Path, path)
	}
	ns := r.URL.Query().Get("namespace")
	if body.Namespace != "" && ns != "" && body.Namespace != ns {
		return nil, codedErrorf(http.StatusBadRequest, "Variable namespace %q in the body does not match the namespace parameter %q", body.Namespace, ns)
	}
	if ns == "" {
		ns = body.Namespace
	}
	v := &structs.VariableDecrypted{
		VariableMetadata: structs.VariableMetadata{Namespace: ns, Path: path, ModifyIndex: body.ModifyIndex},
		Items:            body.Items,
	}
	if l := body.Lock; l != nil {
		ttl, err := lockDuration("Lock.TTL", l.TTL)
		if err != nil {
			return nil, err
		}
		delay, err := lockDuration("Lock.LockDelay", l.LockDelay)
		if err != nil {
			return nil, err
		}
		v.Lock = &structs.VariableLock{ID: l.ID, TTL: ttl, LockDelay: delay}
	}
	return v, nil
}

func lockDuration(field, s string) (time.Duration, error) {
	if s == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, codedErrorf(http.StatusBadRequest, "Invalid %s %q: use a duration such as \"15s\"", field, s)
	}
	return d, nil
}

// casParam reads ?cas=<index>: ok is false when it is absent.
func casParam(r *http.Request) (uint64, bool, error) {
	q := r.URL.Query()
	if !q.Has("cas") {
		return 0, false, nil
	}
	n, err := strconv.ParseUint(q.Get("cas"), 10, 64)
	if err != nil {
		return 0, false, codedErrorf(http.StatusBadRequest, "Invalid cas %q: must be a non-negative integer (the ModifyIndex to check)", q.Get("cas"))
	}
	return n, true, nil
}

// lockOperation is the one lock parameter a PUT may carry, or "".
func lockOperation(r *http.Request) (string, error) {
	var op string
	for _, p := range []string{"lock-acquire", "lock-renew", "lock-release"} {
		if r.URL.Query().Has(p) {
			if op != "" {
				return "", codedErrorf(http.StatusBadRequest, "Only one of lock-acquire, lock-renew and lock-release may be given")
			}
			op = p
		}
	}
	return op, nil
}

func (s *HTTPServer) variablePut(w http.ResponseWriter, r *http.Request) (any, error) {
	v, err := variableIn(r)
	if err != nil {
		return nil, err
	}
	lockOp, err := lockOperation(r)
	if err != nil {
		return nil, err
	}
	idx, cas, err := casParam(r)
	if err != nil {
		return nil, err
	}
	if lockOp != "" && cas {
		return nil, codedErrorf(http.StatusBadRequest, "cas can't be combined with %s", lockOp)
	}
	if lockOp == "lock-renew" {
		return s.variableRenew(w, r, v)
	}
	op := structs.VarOpSet
	switch {
	case lockOp == "lock-acquire":
		op = structs.VarOpLockAcquire
	case lockOp == "lock-release":
		op = structs.VarOpLockRelease
	case cas:
		op = structs.VarOpCAS
		v.ModifyIndex = idx
	}
	return s.variableApply(w, r, op, v)
}

func (s *HTTPServer) variableRenew(w http.ResponseWriter, r *http.Request, v *structs.VariableDecrypted) (any, error) {
	args := &structs.VariablesRenewLockRequest{Path: v.Path, LockID: v.LockID(), WriteRequest: writeRequest(r)}
	args.WriteRequest.Namespace = v.Namespace
	var reply structs.VariablesRenewLockResponse
	if err := s.call(r, "Variables.RenewLock", args, &reply); err != nil {
		return nil, err
	}
	setIndex(w, reply.Index)
	return variableMeta(reply.VarMeta), nil
}

func (s *HTTPServer) variableApply(w http.ResponseWriter, r *http.Request, op structs.VarOp, v *structs.VariableDecrypted) (any, error) {
	args := &structs.VariablesApplyRequest{Op: op, Var: v, WriteRequest: writeRequest(r)}
	var reply structs.VariablesApplyResponse
	if err := s.call(r, "Variables.Apply", args, &reply); err != nil {
		return nil, err
	}
	setIndex(w, reply.Index)
	if reply.IsConflict() {
		// Upstream's answer: 409 with the variable the write lost to.
		return withStatus{Code: http.StatusConflict, Body: variableOut(reply.Conflict)}, nil
	}
	if op == structs.VarOpDelete || op == structs.VarOpDeleteCAS {
		w.WriteHeader(http.StatusNoContent)
		return answered{}, nil
	}
	return variableOut(reply.Output), nil
}

func (s *HTTPServer) variableDelete(w http.ResponseWriter, r *http.Request) (any, error) {
	idx, cas, err := casParam(r)
	if err != nil {
		return nil, err
	}
	v := &structs.VariableDecrypted{VariableMetadata: structs.VariableMetadata{
		Namespace: r.URL.Query().Get("namespace"), Path: r.PathValue("path"), ModifyIndex: idx,
	}}
	op := structs.VarOpDelete
	if cas {
		op = structs.VarOpDeleteCAS
	}
	return s.variableApply(w, r, op, v)
}

func (s *HTTPServer) keyringList(w http.ResponseWriter, r *http.Request) (any, error) {
	args := &structs.KeyringListRootKeyMetaRequest{}
	var reply structs.KeyringListRootKeyMetaResponse
	if err := s.query(w, r, readCall{"Keyring.List", &args.QueryOptions, args, &reply, &reply.QueryMeta}); err != nil {
		return nil, err
	}
	return nonNil(reply.Keys), nil
}

func (s *HTTPServer) keyringRotate(w http.ResponseWriter, r *http.Request) (any, error) {
	full, err := boolParam(r, "full")
	if err != nil {
		return nil, err
	}
	if r.URL.Query().Get("publish_time") != "" {
		return nil, codedErrorf(http.StatusBadRequest, "publish_time is not supported: a rotation takes effect at once")
	}
	args := &structs.KeyringRotateRootKeyRequest{
		Algorithm: structs.EncryptionAlgorithm(r.URL.Query().Get("algo")), Full: full, WriteRequest: writeRequest(r),
	}
	var reply structs.KeyringRotateRootKeyResponse
	if err := s.call(r, "Keyring.Rotate", args, &reply); err != nil {
		return nil, err
	}
	setIndex(w, reply.Index)
	return struct{ Key *structs.RootKeyMeta }{reply.Key}, nil
}

// tlsCAList lists the cluster's TLS CAs (tls.auto), never their keys.
func (s *HTTPServer) tlsCAList(w http.ResponseWriter, r *http.Request) (any, error) {
	args := &structs.TLSCAListRequest{}
	var reply structs.TLSCAListResponse
	if err := s.query(w, r, readCall{"Operator.TLSCAList", &args.QueryOptions, args, &reply, &reply.QueryMeta}); err != nil {
		return nil, err
	}
	return nonNil(reply.CAs), nil
}

// tlsCARotate makes a new active TLS CA.
func (s *HTTPServer) tlsCARotate(w http.ResponseWriter, r *http.Request) (any, error) {
	args := &structs.TLSCARotateRequest{WriteRequest: writeRequest(r)}
	var reply structs.TLSCARotateResponse
	if err := s.call(r, "Operator.TLSCARotate", args, &reply); err != nil {
		return nil, err
	}
	setIndex(w, reply.Index)
	return struct{ CA *structs.TLSCAStub }{reply.CA}, nil
}

// keyringDelete removes a root key that is neither active nor in use:
// 400 for those, 404 for a key that does not exist, as upstream.
func (s *HTTPServer) keyringDelete(w http.ResponseWriter, r *http.Request) (any, error) {
	args := &structs.KeyringDeleteRootKeyRequest{KeyID: r.PathValue("id"), WriteRequest: writeRequest(r)}
	var reply structs.KeyringDeleteRootKeyResponse
	if err := s.call(r, "Keyring.Delete", args, &reply); err != nil {
		if errors.Is(err, structs.ErrUnknownRootKey) {
			return nil, codedErrorf(http.StatusNotFound, "%v", err)
		}
		return nil, err
	}
	setIndex(w, reply.Index)
	return nil, nil
}
