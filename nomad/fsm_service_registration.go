package nomad

import "github.com/nomad-edge/nomad/nomad/structs"

func (f *nomadFSM) applyServiceRegistrationUpsert(req *structs.ServiceRegistrationUpsertRequest, index uint64) error {
	return f.State().UpsertServiceRegistrations(index, req.Services)
}

func (f *nomadFSM) applyServiceRegistrationDeleteByID(req *structs.ServiceRegistrationDeleteByIDRequest, index uint64) error {
	return f.State().DeleteServiceRegistrationByID(index, req.ID)
}
