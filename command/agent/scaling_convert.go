package agent

import (
	"github.com/nomad-edge/nomad/api"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// convertScaling converts a canonicalized group scaling block. A missing
// max becomes -1, which validation refuses by name (max has no default);
// ID, Target and the indexes are the servers' to set.
func convertScaling(p *api.ScalingPolicy) *structs.ScalingPolicy {
	if p == nil {
		return nil
	}
	out := &structs.ScalingPolicy{
		Type:    p.Type,
		Policy:  p.Policy,
		Min:     deref(p.Min),
		Max:     -1,
		Enabled: deref(p.Enabled),
	}
	if p.Max != nil {
		out.Max = *p.Max
	}
	return out
}
