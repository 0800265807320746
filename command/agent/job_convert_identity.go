package agent

import (
	"slices"

	"github.com/nomad-edge/nomad/api"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// convertIdentity converts a task's `identity` block; the servers refuse
// the fields nothing honours yet (structs.WorkloadIdentity).
func convertIdentity(w *api.WorkloadIdentity) *structs.WorkloadIdentity {
	if w == nil {
		return nil
	}
	return &structs.WorkloadIdentity{
		Name: w.Name, Audience: slices.Clone(w.Audience), ChangeMode: w.ChangeMode, ChangeSignal: w.ChangeSignal,
		Env: w.Env, File: w.File, TTL: w.TTL,
	}
}
