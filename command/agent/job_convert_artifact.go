package agent

import (
	"maps"

	"github.com/nomad-edge/nomad/api"
	"github.com/nomad-edge/nomad/nomad/structs"
)

func convertArtifacts(in []*api.TaskArtifact) []*structs.TaskArtifact {
	if len(in) == 0 {
		return nil
	}
	out := make([]*structs.TaskArtifact, 0, len(in))
	for _, a := range in {
		if a == nil {
			continue
		}
		out = append(out, &structs.TaskArtifact{
			GetterSource:  deref(a.GetterSource),
			GetterOptions: maps.Clone(a.GetterOptions),
			GetterHeaders: maps.Clone(a.GetterHeaders),
			GetterMode:    deref(a.GetterMode),
			RelativeDest:  deref(a.RelativeDest),
		})
	}
	return out
}
