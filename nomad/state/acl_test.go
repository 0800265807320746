package state

import (
	"errors"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/nomad/structs"
)

func mockManagementToken() *structs.ACLToken {
	return &structs.ACLToken{
		AccessorID: structs.GenerateUUID(), SecretID: structs.GenerateUUID(),
		Name: "Bootstrap Token", Type: structs.ACLManagementToken, Global: true, CreateTime: time.Unix(20, 0).UTC(),
	}
}

// TestBootstrapACLTokens_Once checks that the first management token is
// made once, and that a restored store (a server restarted from a
// snapshot) still refuses a second bootstrap: otherwise anyone reaching
// the API could mint themselves a management token.
func TestBootstrapACLTokens_Once(t *testing.T) {
	s := testStateStore(t)
	first := mockManagementToken()
	must.NoError(t, s.BootstrapACLTokens(5, first))
	err := s.BootstrapACLTokens(6, mockManagementToken())
	must.True(t, errors.Is(err, structs.ErrACLBootstrapped))
	must.ErrorContains(t, err, "reset index: 5")

	restored := persistAndRestore(t, s)
	err = restored.BootstrapACLTokens(7, mockManagementToken())
	must.True(t, errors.Is(err, structs.ErrACLBootstrapped))
	got, err := restored.ACLTokenBySecretID(nil, first.SecretID)
	must.NoError(t, err)
	must.Eq(t, first.AccessorID, got.AccessorID)
}

// TestUpsertACLTokens_KeepsSecret checks that updating a token (its name
// or policies) never changes or clears its secret.
func TestUpsertACLTokens_KeepsSecret(t *testing.T) {
	s := testStateStore(t)
	tok := &structs.ACLToken{AccessorID: "a", SecretID: "s", Type: structs.ACLClientToken, Policies: []string{"p"}}
	must.NoError(t, s.UpsertACLTokens(5, []*structs.ACLToken{tok}))
	must.NoError(t, s.UpsertACLTokens(6, []*structs.ACLToken{{AccessorID: "a", Name: "renamed", Type: structs.ACLClientToken, Policies: []string{"q"}}}))
	got, err := s.ACLTokenByAccessorID(nil, "a")
	must.NoError(t, err)
	must.Eq(t, "s", got.SecretID)
	must.Eq(t, "renamed", got.Name)
	must.Eq(t, uint64(5), got.CreateIndex)
	must.Eq(t, uint64(6), got.ModifyIndex)

	must.NoError(t, s.DeleteACLTokens(7, []string{"a"}))
	got, err = s.ACLTokenBySecretID(nil, "s")
	must.NoError(t, err)
	must.Nil(t, got)
	must.True(t, errors.Is(s.DeleteACLTokens(8, []string{"a"}), structs.ErrUnknownACLToken))
}

// TestACLPolicies_UpsertDelete checks the policy table's grammar.
func TestACLPolicies_UpsertDelete(t *testing.T) {
	s := testStateStore(t)
	must.NoError(t, s.UpsertACLPolicies(5, []*structs.ACLPolicy{{Name: "a", Rules: "x"}}))
	must.NoError(t, s.UpsertACLPolicies(6, []*structs.ACLPolicy{{Name: "a", Rules: "y"}}))
	p, err := s.ACLPolicyByName(nil, "a")
	must.NoError(t, err)
	must.Eq(t, "y", p.Rules)
	must.Eq(t, uint64(5), p.CreateIndex)
	idx, err := s.Index(TableACLPolicies)
	must.NoError(t, err)
	must.Eq(t, uint64(6), idx)
	must.NoError(t, s.DeleteACLPolicies(7, []string{"a"}))
	must.True(t, errors.Is(s.DeleteACLPolicies(8, []string{"a"}), structs.ErrUnknownACLPolicy))
}
