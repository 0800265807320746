package nomad

import (
	"fmt"

	"github.com/nomad-edge/nomad/nomad/structs"
)

// applyACL applies the ACL entries; ok is false for any other type.
func (f *nomadFSM) applyACL(t structs.MessageType, buf []byte, index uint64) (resp any, ok bool) {
	st := f.State()
	switch t {
	case structs.ACLPolicyUpsertRequestType:
		var req structs.ACLPolicyUpsertRequest
		if err := structs.Decode(buf, &req); err != nil {
			return fmt.Errorf("decoding %s: %w", t, err), true
		}
		return st.UpsertACLPolicies(index, req.Policies), true
	case structs.ACLPolicyDeleteRequestType:
		var req structs.ACLPolicyDeleteRequest
		if err := structs.Decode(buf, &req); err != nil {
			return fmt.Errorf("decoding %s: %w", t, err), true
		}
		return st.DeleteACLPolicies(index, req.Names), true
	case structs.ACLTokenUpsertRequestType:
		var req structs.ACLTokenUpsertRequest
		if err := structs.Decode(buf, &req); err != nil {
			return fmt.Errorf("decoding %s: %w", t, err), true
		}
		return st.UpsertACLTokens(index, req.Tokens), true
	case structs.ACLTokenDeleteRequestType:
		var req structs.ACLTokenDeleteRequest
		if err := structs.Decode(buf, &req); err != nil {
			return fmt.Errorf("decoding %s: %w", t, err), true
		}
		return st.DeleteACLTokens(index, req.AccessorIDs), true
	case structs.OneTimeTokenUpsertRequestType:
		var req structs.OneTimeTokenUpsertRequest
		if err := structs.Decode(buf, &req); err != nil {
			return fmt.Errorf("decoding %s: %w", t, err), true
		}
		return st.UpsertOneTimeToken(index, req.OneTimeToken, req.Expired), true
	case structs.OneTimeTokenDeleteRequestType:
		var req structs.OneTimeTokenDeleteRequest
		if err := structs.Decode(buf, &req); err != nil {
			return fmt.Errorf("decoding %s: %w", t, err), true
		}
		return st.DeleteOneTimeTokens(index, req.OneTimeSecretIDs), true
	case structs.ACLTokenBootstrapRequestType:
		var req structs.ACLTokenBootstrapRequest
		if err := structs.Decode(buf, &req); err != nil {
			return fmt.Errorf("decoding %s: %w", t, err), true
		}
		return st.BootstrapACLTokens(index, req.Token), true
	}
	return nil, false
}
