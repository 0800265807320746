package nomad

import "github.com/nomad-edge/nomad/nomad/structs"

func (f *nomadFSM) applyNamespaceUpsert(req *structs.NamespaceUpsertRequest, index uint64) error {
	return f.State().UpsertNamespaces(index, req.Namespaces)
}

func (f *nomadFSM) applyNamespaceDelete(req *structs.NamespaceDeleteRequest, index uint64) error {
	return f.State().DeleteNamespaces(index, req.Namespaces)
}
