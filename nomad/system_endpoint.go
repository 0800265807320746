package nomad

import "github.com/nomad-edge/nomad/nomad/structs"

// System is the System.* RPC endpoint: cluster-wide maintenance.
type System struct {
	srv *Server
}

// GarbageCollect runs every garbage collection at once, ignoring the
// thresholds (PUT /v1/system/gc, nomad system gc). Unlike upstream, which
// queues a core evaluation and answers at once, it returns when the
// collection is committed, so a script that runs it next sees the result.
func (s *System) GarbageCollect(args *structs.GenericRequest, reply *structs.GenericResponse) error {
	if handled, err := s.srv.forward("System.GarbageCollect", args, reply); handled {
		return err
	}
	if err := s.srv.authorize(args.AuthToken, permManagement); err != nil {
		return err
	}
	if err := s.srv.forceGC(); err != nil {
		return err
	}
	index, err := s.srv.State().LatestIndex()
	if err != nil {
		return err
	}
	reply.Index = index
	return nil
}
