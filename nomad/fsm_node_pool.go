package nomad

import (
	"fmt"

	"github.com/nomad-edge/nomad/nomad/structs"
)

// applyNodePool applies the node pool entries, and the site outages
// declared for pools' sites; ok is false for any other
// type.
func (f *nomadFSM) applyNodePool(t structs.MessageType, buf []byte, index uint64) (resp any, ok bool) {
	switch t {
	case structs.NodePoolUpsertRequestType:
		var req structs.NodePoolUpsertRequest
		if err := structs.Decode(buf, &req); err != nil {
			return fmt.Errorf("decoding %s: %w", t, err), true
		}
		return f.State().UpsertNodePools(index, req.NodePools), true
	case structs.NodePoolDeleteRequestType:
		var req structs.NodePoolDeleteRequest
		if err := structs.Decode(buf, &req); err != nil {
			return fmt.Errorf("decoding %s: %w", t, err), true
		}
		return f.State().DeleteNodePools(index, req.Names), true
	case structs.SiteOutageUpdateRequestType:
		var req structs.SiteOutageUpdateRequest
		if err := structs.Decode(buf, &req); err != nil {
			return fmt.Errorf("decoding %s: %w", t, err), true
		}
		if err := f.State().UpdateSiteOutages(index, &req); err != nil {
			return err, true
		}
		f.trackEvals(req.Evals)
		return nil, true
	}
	return nil, false
}
