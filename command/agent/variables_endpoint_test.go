package agent_test

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	nomadapi "github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/command/agent/agenttest"
)

// The official client creates, reads, lists, updates with check-and-set
// and deletes a variable: the wire shapes (Items, indexes, 409 with the
// conflicting variable, 204 on delete) are upstream's, so tools written
// against upstream work unchanged.
func TestHTTP_OfficialClientVariables(t *testing.T) {
	a := agenttest.NewDevAgent(t, nil)
	c := officialClient(t, a)
	vars := c.Variables()

	created, _, err := vars.CheckedCreate(&nomadapi.Variable{Path: "app/db", Items: nomadapi.VariableItems{"user": "me", "pass": "s3cret"}}, nil)
	must.NoError(t, err)
	must.Eq(t, "default", created.Namespace)
	must.Eq(t, "s3cret", created.Items["pass"])
	must.Positive(t, created.ModifyIndex)

	got, _, err := vars.Read("app/db", nil)
	must.NoError(t, err)
	must.Eq(t, created.Items, got.Items)
	must.Eq(t, created.ModifyIndex, got.ModifyIndex)

	// A second create of the same path loses: 409 with the stored one.
	_, _, err = vars.CheckedCreate(&nomadapi.Variable{Path: "app/db", Items: nomadapi.VariableItems{"user": "other"}}, nil)
	var conflict nomadapi.ErrCASConflict
	must.True(t, errors.As(err, &conflict), must.Sprintf("want a CAS conflict, got %v", err))
	must.Eq(t, "me", conflict.Conflict.Items["user"])
	must.Eq(t, created.ModifyIndex, conflict.Conflict.ModifyIndex)

	got.Items["user"] = "you"
	updated, _, err := vars.CheckedUpdate(got, nil)
	must.NoError(t, err)
	must.Eq(t, "you", updated.Items["user"])
	must.Eq(t, got.CreateIndex, updated.CreateIndex)
	must.Greater(t, got.ModifyIndex, updated.ModifyIndex)

	_, _, err = vars.CheckedCreate(&nomadapi.Variable{Path: "app/other", Items: nomadapi.VariableItems{"k": "v"}}, nil)
	must.NoError(t, err)
	list, _, err := vars.PrefixList("app/", nil)
	must.NoError(t, err)
	must.Len(t, 2, list)
	must.Eq(t, "app/db", list[0].Path)

	page, meta, err := vars.List(&nomadapi.QueryOptions{PerPage: 1})
	must.NoError(t, err)
	must.Len(t, 1, page)
	must.Eq(t, "default.app/other", meta.NextToken)

	_, err = vars.CheckedDelete("app/db", created.ModifyIndex, nil)
	must.True(t, errors.As(err, &conflict), must.Sprintf("a delete at a stale index conflicts, got %v", err))
	_, err = vars.CheckedDelete("app/db", updated.ModifyIndex, nil)
	must.NoError(t, err)
	_, _, err = vars.Read("app/db", nil)
	must.ErrorIs(t, err, nomadapi.ErrVariablePathNotFound)
}

// A variable over 64KiB, a bad path and a reserved nomad/ path are
// refused with a 400 that says why (the size in bytes for the first).
func TestHTTP_VariableRefusals(t *testing.T) {
	a := agenttest.NewDevAgent(t, nil)
	for _, tc := range []struct {
		path, body, want string
	}{
		{"big/one", `{"Items":{"v":"` + strings.Repeat("a", 70000) + `"}}`, "variables are limited to 64KiB in total size (this one is 70008 bytes)"},
		{"bad!path", `{"Items":{"v":"1"}}`, `invalid path "bad!path"`},
		{"nomad/foo", `{"Items":{"v":"1"}}`, `only paths at "nomad/jobs" or "nomad/job-templates"`},
		{"empty/one", `{"Items":{}}`, "empty variables are invalid"},
	} {
		req, err := http.NewRequest(http.MethodPut, a.HTTPAddr+"/v1/var/"+tc.path, strings.NewReader(tc.body))
		must.NoError(t, err)
		resp, err := http.DefaultClient.Do(req)
		must.NoError(t, err)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		must.Eq(t, http.StatusBadRequest, resp.StatusCode, must.Sprintf("%s: %s", tc.path, body))
		must.StrContains(t, string(body), tc.want)
	}
}

// The official client's lock calls: acquire hands out a lock ID, a second
// acquire conflicts, renew with the ID works and without it does not,
// a write without the ID conflicts, release frees the lock for the next
// acquirer.
func TestHTTP_OfficialClientVariableLocks(t *testing.T) {
	a := agenttest.NewDevAgent(t, nil)
	vars := officialClient(t, a).Variables()

	held, _, err := vars.AcquireLock(&nomadapi.Variable{Path: "locks/leader", Lock: &nomadapi.VariableLock{TTL: "30s", LockDelay: "0s"}}, nil)
	must.NoError(t, err)
	must.NotEq(t, "", held.LockID())
	must.Eq(t, "30s", held.Lock.TTL)

	_, _, err = vars.AcquireLock(&nomadapi.Variable{Path: "locks/leader", Lock: &nomadapi.VariableLock{TTL: "30s"}}, nil)
	must.ErrorContains(t, err, "409")

	_, _, err = vars.RenewLock(&nomadapi.Variable{Path: "locks/leader", Lock: &nomadapi.VariableLock{ID: held.LockID()}}, nil)
	must.NoError(t, err)
	_, _, err = vars.RenewLock(&nomadapi.Variable{Path: "locks/leader", Lock: &nomadapi.VariableLock{ID: "not-mine"}}, nil)
	must.ErrorContains(t, err, "409")

	_, _, err = vars.CheckedUpdate(&nomadapi.Variable{Path: "locks/leader", ModifyIndex: held.ModifyIndex, Items: nomadapi.VariableItems{"k": "v"}}, nil)
	var conflict nomadapi.ErrCASConflict
	must.True(t, errors.As(err, &conflict), must.Sprintf("a write without the lock ID conflicts, got %v", err))
	must.Eq(t, "", conflict.Conflict.LockID(), must.Sprint("a conflict does not hand out the holder's lock ID"))

	_, _, err = vars.ReleaseLock(&nomadapi.Variable{Path: "locks/leader", Lock: &nomadapi.VariableLock{ID: held.LockID()}}, nil)
	must.NoError(t, err)
	next, _, err := vars.AcquireLock(&nomadapi.Variable{Path: "locks/leader", Lock: &nomadapi.VariableLock{TTL: "30s"}}, nil)
	must.NoError(t, err)
	must.NotEq(t, held.LockID(), next.LockID())
}

// The keyring endpoints: one active key on a new cluster, a rotation makes
// a new active key and keeps the old one (inactive) to decrypt, and a
// variable written before the rotation still reads.
func TestHTTP_OfficialClientKeyring(t *testing.T) {
	a := agenttest.NewDevAgent(t, nil)
	c := officialClient(t, a)
	_, _, err := c.Variables().Create(&nomadapi.Variable{Path: "before/rotate", Items: nomadapi.VariableItems{"k": "v"}}, nil)
	must.NoError(t, err)

	keys, _, err := c.Keyring().List(nil)
	must.NoError(t, err)
	must.Len(t, 1, keys)
	must.Eq(t, nomadapi.RootKeyStateActive, keys[0].State)
	must.Eq(t, nomadapi.EncryptionAlgorithmAES256GCM, keys[0].Algorithm)

	key, _, err := c.Keyring().Rotate(nil, nil)
	must.NoError(t, err)
	must.NotEq(t, keys[0].KeyID, key.KeyID)
	keys, _, err = c.Keyring().List(nil)
	must.NoError(t, err)
	must.Len(t, 2, keys)
	states := map[string]nomadapi.RootKeyState{}
	for _, k := range keys {
		states[k.KeyID] = k.State
	}
	must.Eq(t, nomadapi.RootKeyStateActive, states[key.KeyID])
	got, _, err := c.Variables().Read("before/rotate", nil)
	must.NoError(t, err)
	must.Eq(t, "v", got.Items["k"])
}

// /.well-known/jwks.json publishes the keyring's public signing keys
// (Ed25519, kid = root key ID) without a token, and a rotation adds one;
// the OIDC discovery document points at it.
func TestHTTP_WellKnownJWKS(t *testing.T) {
	a := agenttest.NewDevAgent(t, nil)
	get := func(path string) map[string]any {
		resp, err := http.Get(a.HTTPAddr + path)
		must.NoError(t, err)
		defer resp.Body.Close()
		must.Eq(t, http.StatusOK, resp.StatusCode)
		var out map[string]any
		must.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
		return out
	}
	keys := get("/.well-known/jwks.json")["keys"].([]any)
	must.Len(t, 1, keys)
	k := keys[0].(map[string]any)
	must.Eq(t, "OKP", k["kty"])
	must.Eq(t, "Ed25519", k["crv"])
	must.Eq(t, "EdDSA", k["alg"])

	_, _, err := officialClient(t, a).Keyring().Rotate(nil, nil)
	must.NoError(t, err)
	must.Len(t, 2, get("/.well-known/jwks.json")["keys"].([]any))
	oidc := get("/.well-known/openid-configuration")
	must.StrHasSuffix(t, "/.well-known/jwks.json", oidc["jwks_uri"].(string))
}
