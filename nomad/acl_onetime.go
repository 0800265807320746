package nomad

import (
	"fmt"

	"github.com/nomad-edge/nomad/nomad/structs"
)

// UpsertOneTimeToken makes a one-time token for the caller's own ACL
// token, good for structs.OneTimeTokenTTL, as upstream's. The raft entry
// also deletes the one-time tokens already past their time, by the
// leader's clock, so they do not pile up.
func (a *ACL) UpsertOneTimeToken(args *structs.OneTimeTokenUpsertRequest, reply *structs.OneTimeTokenUpsertResponse) error {
	if err := a.enabled(); err != nil {
		return err
	}
	if done, err := a.srv.forward("ACL.UpsertOneTimeToken", args, reply); done {
		return err
	}
	_, token, err := a.srv.resolveToken(args.AuthToken)
	if err != nil {
		return err
	}
	if token == nil {
		return fmt.Errorf("%w: a one-time token stands for an ACL token: give one", structs.ErrPermissionDenied)
	}
	args.AuthToken = ""
	now := a.srv.clock.Now().UTC()
	iter, err := a.srv.State().OneTimeTokens(nil)
	if err != nil {
		return err
	}
	args.Expired = nil
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		if ott := raw.(*structs.OneTimeToken); !ott.ExpiresAt.After(now) {
			args.Expired = append(args.Expired, ott.OneTimeSecretID)
		}
	}
	args.OneTimeToken = &structs.OneTimeToken{
		OneTimeSecretID: structs.GenerateUUID(), AccessorID: token.AccessorID,
		ExpiresAt: now.Add(structs.OneTimeTokenTTL),
	}
	_, index, err := a.srv.raftApply(structs.OneTimeTokenUpsertRequestType, args)
	if err != nil {
		return err
	}
	stored, err := a.srv.State().OneTimeTokenBySecret(nil, args.OneTimeToken.OneTimeSecretID)
	if err != nil {
		return err
	}
	reply.OneTimeToken, reply.Index = stored, index
	return nil
}

// ExchangeOneTimeToken trades a one-time secret, once and before it
// expires, for the ACL token it stands for; the one-time token is deleted
// in the same step. It needs no other credential: the secret is one.
func (a *ACL) ExchangeOneTimeToken(args *structs.OneTimeTokenExchangeRequest, reply *structs.OneTimeTokenExchangeResponse) error {
	if err := a.enabled(); err != nil {
		return err
	}
	if done, err := a.srv.forward("ACL.ExchangeOneTimeToken", args, reply); done {
		return err
	}
	args.AuthToken = ""
	if args.OneTimeSecretID == "" {
		return fmt.Errorf("%w: OneTimeSecretID", structs.ErrMissingField)
	}
	st := a.srv.State()
	ott, err := st.OneTimeTokenBySecret(nil, args.OneTimeSecretID)
	if err != nil {
		return err
	}
	if ott == nil || !ott.ExpiresAt.After(a.srv.clock.Now()) {
		return structs.ErrOneTimeTokenInvalid
	}
	token, err := st.ACLTokenByAccessorID(nil, ott.AccessorID)
	if err != nil {
		return err
	}
	if token == nil || token.IsExpired(a.srv.clock.Now()) {
		return structs.ErrOneTimeTokenInvalid
	}
	del := &structs.OneTimeTokenDeleteRequest{OneTimeSecretIDs: []string{ott.OneTimeSecretID}}
	_, index, err := a.srv.raftApply(structs.OneTimeTokenDeleteRequestType, del)
	if err != nil {
		return err
	}
	reply.Token, reply.Index = token, index
	return nil
}
