package nomad

import (
	"github.com/nomad-edge/nomad/nomad/state"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// rekeyKick wakes the leader's rekey duty after a full rotation.
func (s *Server) rekeyKick() {
	select {
	case s.rekeyCh <- struct{}{}:
	default:
	}
}

// rekeyDuty is the leader duty of a full rotation: it re-encrypts with
// the active key every variable whose key is "rekeying", then marks those
// keys "deprecated". It runs at the start of each term too, so a rotation
// the previous leader did not finish is finished.
func (s *Server) rekeyDuty(stop <-chan struct{}) {
	for {
		if err := s.rekeyOnce(stop); err != nil {
			s.logger.Warn("keyring rekey stopped; it resumes on the next rotation or leader", "error", err)
		}
		select {
		case <-stop:
			return
		case <-s.rekeyCh:
		}
	}
}

func (s *Server) rekeyOnce(stop <-chan struct{}) error {
	metas, err := s.State().RootKeyMetas(nil)
	if err != nil {
		return err
	}
	rekeying := map[string]*structs.RootKeyMeta{}
	for _, m := range metas {
		if m.State == structs.RootKeyStateRekeying {
			rekeying[m.KeyID] = m
		}
	}
	if len(rekeying) == 0 {
		return nil
	}
	vars, err := s.State().Variables(nil, state.AllNamespaces, "")
	if err != nil {
		return err
	}
	for _, v := range vars {
		select {
		case <-stop:
			return nil
		default:
		}
		if rekeying[v.KeyID] == nil {
			continue
		}
		dec, err := s.encrypter.decryptVar(v)
		if err != nil {
			return err
		}
		// A check-and-set: a write that lands first was encrypted with
		// the active key already, and wins.
		if _, err := s.applyVar(structs.VarOpCAS, dec, false, 0); err != nil {
			return err
		}
	}
	for _, m := range rekeying {
		c := m.Copy()
		c.State = structs.RootKeyStateDeprecated
		if _, _, err := s.raftApply(structs.RootKeyMetaUpsertRequestType, &structs.KeyringUpdateRootKeyMetaRequest{RootKeyMeta: c}); err != nil {
			return err
		}
	}
	return nil
}
