package client

import (
	"fmt"
	"os"

	"github.com/nomad-edge/nomad/nomad/structs"
)

// fingerprintHostVolumes returns the node's host volumes (Node.HostVolumes)
// from the client's host_volume blocks. A path that cannot be stat'ed stops
// the client from starting, with upstream's words: a job placed here for
// the volume would fail on every start.
func fingerprintHostVolumes(cfg map[string]*structs.ClientHostVolumeConfig) (map[string]*structs.ClientHostVolumeConfig, error) {
	if len(cfg) == 0 {
		return nil, nil
	}
	for name, hv := range cfg {
		if _, err := os.Stat(hv.Path); err != nil {
			return nil, fmt.Errorf("failed to validate volume %s, err: %v", name, err)
		}
	}
	return structs.CopyHostVolumes(cfg), nil
}
