package nomad

import (
	"errors"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/nomad/structs"
)

// A token made with ExpirationTTL gets its ExpirationTime at creation and
// is refused (ErrTokenExpired, a 403) once the servers' clock passes it,
// as upstream's; a TTL outside upstream's default bounds (1m to 24h) or
// both fields at once is refused at creation, and an update may not move
// the expiration (one that names none keeps it).
func TestACL_TokenExpiration(t *testing.T) {
	clock := newManualClock()
	s := testServer(t, func(c *Config) { c.ACLEnabled = true; c.Clock = clock })
	var boot structs.ACLTokenUpsertResponse
	must.NoError(t, s.RPC("ACL.Bootstrap", &structs.ACLTokenBootstrapRequest{}, &boot))
	mgmt := boot.Tokens[0]
	must.Nil(t, mgmt.ExpirationTime, must.Sprint("the bootstrap token never expires"))
	write := structs.WriteRequest{AuthToken: mgmt.SecretID}

	create := func(tok *structs.ACLToken) (*structs.ACLToken, error) {
		var resp structs.ACLTokenUpsertResponse
		err := s.RPC("ACL.UpsertTokens", &structs.ACLTokenUpsertRequest{Tokens: []*structs.ACLToken{tok}, WriteRequest: write}, &resp)
		if err != nil {
			return nil, err
		}
		return resp.Tokens[0], nil
	}
	start := clock.Now()
	tok, err := create(&structs.ACLToken{Name: "short", Type: structs.ACLManagementToken, ExpirationTTL: 10 * time.Minute})
	must.NoError(t, err)
	must.NotNil(t, tok.ExpirationTime)
	must.Eq(t, start.Add(10*time.Minute).UTC(), tok.ExpirationTime.UTC())
	must.Eq(t, 10*time.Minute, tok.ExpirationTTL)

	resolve := func() error {
		var resp structs.ResolveACLTokenResponse
		return s.RPC("ACL.ResolveToken", &structs.ResolveACLTokenRequest{QueryOptions: structs.QueryOptions{AuthToken: tok.SecretID}}, &resp)
	}
	must.NoError(t, resolve())
	var jobs structs.JobListResponse
	must.NoError(t, s.RPC("Job.List", &structs.JobListRequest{QueryOptions: structs.QueryOptions{AuthToken: tok.SecretID}}, &jobs))

	// An update without expiration fields keeps it; one that moves it is refused.
	_, err = create(&structs.ACLToken{AccessorID: tok.AccessorID, Name: "renamed", Type: structs.ACLManagementToken})
	must.NoError(t, err)
	got, err := s.State().ACLTokenByAccessorID(nil, tok.AccessorID)
	must.NoError(t, err)
	must.Eq(t, tok.ExpirationTime.UTC(), got.ExpirationTime.UTC())
	_, err = create(&structs.ACLToken{AccessorID: tok.AccessorID, Name: "renamed", Type: structs.ACLManagementToken, ExpirationTTL: time.Hour})
	must.ErrorContains(t, err, "its expiration cannot be changed")

	clock.Advance(10 * time.Minute)
	err = resolve()
	must.True(t, errors.Is(err, structs.ErrTokenExpired), must.Sprintf("got %v", err))
	must.True(t, errors.Is(err, structs.ErrPermissionDenied))
	err = s.RPC("Job.List", &structs.JobListRequest{QueryOptions: structs.QueryOptions{AuthToken: tok.SecretID}}, &jobs)
	must.True(t, errors.Is(err, structs.ErrTokenExpired), must.Sprintf("got %v", err))

	at := clock.Now().Add(time.Hour)
	for _, bad := range []struct {
		tok  *structs.ACLToken
		want string
	}{
		{&structs.ACLToken{ExpirationTTL: 30 * time.Second}, "cannot be less than 1m0s"},
		{&structs.ACLToken{ExpirationTTL: 48 * time.Hour}, "cannot be more than 24h0m0s"},
		{&structs.ACLToken{ExpirationTTL: -time.Minute}, "is negative"},
		{&structs.ACLToken{ExpirationTTL: time.Hour, ExpirationTime: &at}, "both ExpirationTime and ExpirationTTL"},
	} {
		bad.tok.Name, bad.tok.Type = "bad", structs.ACLManagementToken
		_, err := create(bad.tok)
		must.True(t, errors.Is(err, structs.ErrInvalidRequest), must.Sprintf("%v", err))
		must.ErrorContains(t, err, bad.want)
	}
	byTime, err := create(&structs.ACLToken{Name: "at", Type: structs.ACLManagementToken, ExpirationTime: &at})
	must.NoError(t, err)
	must.Eq(t, at.UTC(), byTime.ExpirationTime.UTC())
}

// Bootstrap takes the operator's secret (a UUID) for the first
// management token, as upstream's BootstrapSecret; anything else is
// refused by name.
func TestACL_BootstrapSecret(t *testing.T) {
	s := testServer(t, func(c *Config) { c.ACLEnabled = true })
	err := s.RPC("ACL.Bootstrap", &structs.ACLTokenBootstrapRequest{BootstrapSecret: "not-a-uuid"}, &structs.ACLTokenUpsertResponse{})
	must.True(t, errors.Is(err, structs.ErrInvalidRequest))
	must.ErrorContains(t, err, "BootstrapSecret")

	secret := structs.GenerateUUID()
	var resp structs.ACLTokenUpsertResponse
	must.NoError(t, s.RPC("ACL.Bootstrap", &structs.ACLTokenBootstrapRequest{BootstrapSecret: secret}, &resp))
	must.Eq(t, secret, resp.Tokens[0].SecretID)
	var self structs.ResolveACLTokenResponse
	must.NoError(t, s.RPC("ACL.ResolveToken", &structs.ResolveACLTokenRequest{QueryOptions: structs.QueryOptions{AuthToken: secret}}, &self))
	must.Eq(t, resp.Tokens[0].AccessorID, self.Token.AccessorID)
}

// A one-time token stands for its maker's ACL token: exchanged once, it
// gives that token and is gone; a second exchange, one after its 10
// minutes, or an anonymous request for one is refused (403); making a new
// one deletes those past their time in the same raft entry.
func TestACL_OneTimeTokens(t *testing.T) {
	clock := newManualClock()
	s := testServer(t, func(c *Config) { c.ACLEnabled = true; c.Clock = clock })
	var boot structs.ACLTokenUpsertResponse
	must.NoError(t, s.RPC("ACL.Bootstrap", &structs.ACLTokenBootstrapRequest{}, &boot))
	mgmt := boot.Tokens[0]

	upsert := func(secret string) (*structs.OneTimeToken, error) {
		var resp structs.OneTimeTokenUpsertResponse
		err := s.RPC("ACL.UpsertOneTimeToken", &structs.OneTimeTokenUpsertRequest{WriteRequest: structs.WriteRequest{AuthToken: secret}}, &resp)
		return resp.OneTimeToken, err
	}
	exchange := func(secret string) (*structs.ACLToken, error) {
		var resp structs.OneTimeTokenExchangeResponse
		err := s.RPC("ACL.ExchangeOneTimeToken", &structs.OneTimeTokenExchangeRequest{OneTimeSecretID: secret}, &resp)
		return resp.Token, err
	}
	_, err := upsert("")
	must.True(t, errors.Is(err, structs.ErrPermissionDenied), must.Sprintf("%v", err))

	ott, err := upsert(mgmt.SecretID)
	must.NoError(t, err)
	must.Eq(t, mgmt.AccessorID, ott.AccessorID)
	must.Eq(t, clock.Now().Add(10*time.Minute).UTC(), ott.ExpiresAt.UTC())
	got, err := exchange(ott.OneTimeSecretID)
	must.NoError(t, err)
	must.Eq(t, mgmt.SecretID, got.SecretID)
	_, err = exchange(ott.OneTimeSecretID)
	must.True(t, errors.Is(err, structs.ErrOneTimeTokenInvalid), must.Sprintf("used once: %v", err))

	stale, err := upsert(mgmt.SecretID)
	must.NoError(t, err)
	clock.Advance(10 * time.Minute)
	_, err = exchange(stale.OneTimeSecretID)
	must.True(t, errors.Is(err, structs.ErrOneTimeTokenInvalid), must.Sprintf("expired: %v", err))
	_, err = upsert(mgmt.SecretID)
	must.NoError(t, err)
	gone, err := s.State().OneTimeTokenBySecret(nil, stale.OneTimeSecretID)
	must.NoError(t, err)
	must.Nil(t, gone, must.Sprint("the next one-time token's entry deleted the expired one"))
}
