package nomad

import "github.com/nomad-edge/nomad/nomad/structs"

func (f *nomadFSM) applyNodePoolUpsert(req *structs.NodePoolUpsertRequest, index uint64) error {
	return f.State().UpsertNodePools(index, req.NodePools)
}

func (f *nomadFSM) applyNodePoolDelete(req *structs.NodePoolDeleteRequest, index uint64) error {
	return f.State().DeleteNodePools(index, req.Names)
}

// applySiteOutageUpdate declares and clears site outages of pools' sites,
// with the evaluations that place what a cleared outage held.
func (f *nomadFSM) applySiteOutageUpdate(req *structs.SiteOutageUpdateRequest, index uint64) error {
	if err := f.State().UpdateSiteOutages(index, req); err != nil {
		return err
	}
	f.trackEvals(req.Evals)
	return nil
}
