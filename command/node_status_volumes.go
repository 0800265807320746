package command

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/nomad-edge/nomad/api"
)

// nodeHostVolumeNames is the node detail's "Host Volumes" line: the names,
// sorted, as upstream's. Unlike upstream the line is left out for a node
// without any (upstream prints <none>), so the detail stays as it was for
// the nodes that do not use the feature.
func nodeHostVolumeNames(node *api.Node) string {
	if len(node.HostVolumes) == 0 {
		return "<none>"
	}
	return strings.Join(slices.Sorted(maps.Keys(node.HostVolumes)), ",")
}

// formatNodeHostVolumes is the verbose node detail's "Host Volumes" section
// (upstream's columns: Name, ReadOnly, Source), empty without any.
func formatNodeHostVolumes(node *api.Node) string {
	if len(node.HostVolumes) == 0 {
		return ""
	}
	lines := []string{"Name|ReadOnly|Source"}
	for _, name := range slices.Sorted(maps.Keys(node.HostVolumes)) {
		hv := node.HostVolumes[name]
		if hv == nil {
			continue
		}
		lines = append(lines, fmt.Sprintf("%s|%v|%s", name, hv.ReadOnly, hv.Path))
	}
	return "\n\nHost Volumes\n" + formatList(lines)
}
