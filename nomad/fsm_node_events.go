package nomad

import "github.com/nomad-edge/nomad/nomad/structs"

func (f *nomadFSM) applyNodeEventsEmit(req *structs.EmitNodeEventsRequest, index uint64) error {
	return f.State().AddNodeEvents(index, req.NodeEvents)
}
