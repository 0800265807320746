package docker

import (
	"github.com/nomad-edge/nomad/drivers"
)

// bindPropagation maps a volume_mount's propagation_mode to the bind
// option docker (and podman's compatible API) takes, as upstream does.
var bindPropagation = map[string]string{
	"":                               "rprivate",
	drivers.PropagationPrivate:       "rprivate",
	drivers.PropagationHostToTask:    "rslave",
	drivers.PropagationBidirectional: "rshared",
}

// hostVolumeBinds are the task's host volume mounts as container binds,
// "host:container:rw|ro,<propagation>". Host volumes are not gated by the
// plugin's volumes { enabled }, as upstream: the operator chose to offer
// them in the client's host_volume blocks.
func hostVolumeBinds(ms []*drivers.MountConfig) []string {
	var out []string
	for _, m := range ms {
		mode := "rw"
		if m.Readonly {
			mode = "ro"
		}
		prop, ok := bindPropagation[m.PropagationMode]
		if !ok {
			prop = "rprivate"
		}
		out = append(out, m.HostPath+":"+m.TaskPath+":"+mode+","+prop)
	}
	return out
}
