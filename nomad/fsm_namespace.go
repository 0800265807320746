package nomad

import (
	"fmt"

	"github.com/nomad-edge/nomad/nomad/structs"
)

// applyNamespace applies the namespace entries; ok is false for any other
// type.
func (f *nomadFSM) applyNamespace(t structs.MessageType, buf []byte, index uint64) (resp any, ok bool) {
	switch t {
	case structs.NamespaceUpsertRequestType:
		var req structs.NamespaceUpsertRequest
		if err := structs.Decode(buf, &req); err != nil {
			return fmt.Errorf("decoding %s: %w", t, err), true
		}
		return f.State().UpsertNamespaces(index, req.Namespaces), true
	case structs.NamespaceDeleteRequestType:
		var req structs.NamespaceDeleteRequest
		if err := structs.Decode(buf, &req); err != nil {
			return fmt.Errorf("decoding %s: %w", t, err), true
		}
		return f.State().DeleteNamespaces(index, req.Namespaces), true
	}
	return nil, false
}
