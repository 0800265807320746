package nomad

import (
	"fmt"

	"github.com/nomad-edge/nomad/nomad/structs"
)

// applyVarState applies a variable write (items already encrypted) and
// hands back what it did: a check-and-set or lock conflict is an answer,
// not an error, so the endpoint can return the variable it lost to.
func applyVarState(f *nomadFSM, t structs.MessageType, body []byte, index uint64) any {
	var req structs.VarApplyStateRequest
	if err := structs.Decode(body, &req); err != nil {
		return fmt.Errorf("decoding %s: %w", t, err)
	}
	return f.State().VarApply(index, &req)
}

func (f *nomadFSM) applyRootKeyMetaUpsert(req *structs.KeyringUpdateRootKeyMetaRequest, index uint64) error {
	return f.State().UpsertRootKeyMeta(index, req.RootKeyMeta, req.Rekey)
}

// applyRootKeyMetaDelete removes a root key's metadata; each server's
// key replication then drops its material (Server.replicateKeys).
func (f *nomadFSM) applyRootKeyMetaDelete(req *structs.KeyringDeleteRootKeyRequest, index uint64) error {
	return f.State().DeleteRootKeyMeta(index, req.KeyID)
}
