package state

import (
	"fmt"

	"github.com/nomad-edge/nomad/nomad/structs"
)

// UpdateAllocsDesiredTransitions records server intentions on allocations
// (an operator's alloc stop asks for a migration) together with the
// evaluations that act on them, in one transaction so that no evaluation
// runs without the transition it is for. The allocations' ModifyIndex moves;
// AllocModifyIndex does not: the client has nothing to do until the
// scheduler decides. The exception is a mark to skip shutdown_delay on an
// allocation the servers already stopped and its client still runs (it
// waits out its delays): that client has something to do now, and no
// plan will follow to tell it.
func (s *StateStore) UpdateAllocsDesiredTransitions(index uint64, transitions map[string]*structs.DesiredTransition, evals []*structs.Evaluation) error {
	txn := s.writeTxn(index)
	defer txn.Abort()
	for id, tr := range transitions {
		if tr == nil {
			continue
		}
		existing, err := allocByIDTxn(txn.Txn, nil, id)
		if err != nil {
			return err
		}
		if existing == nil {
			continue // garbage collected meanwhile
		}
		alloc := existing.Copy()
		mergeTransition(&alloc.DesiredTransition, tr)
		alloc.ModifyIndex = index
		if tr.ShouldIgnoreShutdownDelay() && !existing.DesiredTransition.ShouldIgnoreShutdownDelay() &&
			existing.ServerTerminalStatus() && !existing.ClientTerminalStatus() {
			alloc.AllocModifyIndex = index
		}
		if err := txn.Insert(TableAllocs, alloc); err != nil {
			return fmt.Errorf("updating allocation %s: %w", id, err)
		}
	}
	if err := upsertEvalsTxn(txn, index, evals); err != nil {
		return err
	}
	return txn.commit()
}

// mergeTransition sets in dst every field set in src.
func mergeTransition(dst *structs.DesiredTransition, src *structs.DesiredTransition) {
	if src.Migrate != nil {
		v := *src.Migrate
		dst.Migrate = &v
	}
	if src.Reschedule != nil {
		v := *src.Reschedule
		dst.Reschedule = &v
	}
	if src.ForceReschedule != nil {
		v := *src.ForceReschedule
		dst.ForceReschedule = &v
	}
	if src.NoShutdownDelay != nil {
		v := *src.NoShutdownDelay
		dst.NoShutdownDelay = &v
	}
}
