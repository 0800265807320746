package agent

import (
	"fmt"
	"path/filepath"
	"slices"

	"github.com/hashicorp/hcl/v2"

	"github.com/nomad-edge/nomad/nomad/structs"
)

// HostVolumeConfig is one client `host_volume "<name>" { path read_only }`
// block: a directory of the host that jobs mount by name through a group
// `volume { type = "host" source = "<name>" }`. The path must be absolute
// here; that it exists is checked when the client starts, as upstream,
// so that a config can be checked on another machine.
type HostVolumeConfig struct {
	Name     string
	Path     string
	ReadOnly bool `json:",omitempty"`
}

// hostVolumeBlock is the block's header in the client body's schema.
var hostVolumeBlock = hcl.BlockHeaderSchema{Type: "host_volume", LabelNames: []string{"name"}}

// hostVolumes decodes every host_volume block of the client body b; a
// second block of a name in one file is an error.
func (d *configDecoder) hostVolumes(b *block) []*HostVolumeConfig {
	var out []*HostVolumeConfig
	for _, blk := range b.content.Blocks {
		if blk.Type != hostVolumeBlock.Type {
			continue
		}
		name := blk.Labels[0]
		if slices.ContainsFunc(out, func(h *HostVolumeConfig) bool { return h.Name == name }) {
			d.errorf(blk.DefRange, "duplicate client.host_volume %q block", name)
			continue
		}
		out = append(out, d.hostVolume(blk.Body, name))
	}
	return out
}

// hostVolume decodes one `host_volume "<name>" { path read_only }`.
func (d *configDecoder) hostVolume(body hcl.Body, name string) *HostVolumeConfig {
	path := fmt.Sprintf("client.host_volume.%s.", name)
	b := d.open(body, path, bodySpec{attrs: []string{"path", "read_only"}})
	hv := &HostVolumeConfig{Name: name}
	if name == "" {
		d.errorf(body.MissingItemRange(), "client.host_volume needs a name: host_volume \"<name>\" { path = \"/abs/dir\" }")
	}
	if !b.str("path", &hv.Path) {
		d.errorf(body.MissingItemRange(), "client.host_volume %q needs a path", name)
	} else if !filepath.IsAbs(hv.Path) {
		d.errorf(b.attr("path").Expr.Range(), "%spath: %q must be an absolute path", path, hv.Path)
	} else {
		hv.Path = filepath.Clean(hv.Path)
	}
	b.boolean("read_only", &hv.ReadOnly)
	return hv
}

// mergeHostVolumes layers later blocks over earlier ones: a block of a
// name seen before replaces it, as host_network blocks merge.
func mergeHostVolumes(into, later []*HostVolumeConfig) []*HostVolumeConfig {
	for _, hv := range later {
		c := *hv
		if i := slices.IndexFunc(into, func(x *HostVolumeConfig) bool { return x.Name == hv.Name }); i >= 0 {
			into[i] = &c
		} else {
			into = append(into, &c)
		}
	}
	return into
}

// copyHostVolumes returns a deep copy.
func copyHostVolumes(in []*HostVolumeConfig) []*HostVolumeConfig {
	var out []*HostVolumeConfig
	for _, hv := range in {
		c := *hv
		out = append(out, &c)
	}
	return out
}

// hostVolumes is the host_volume blocks in the client's terms.
func (cl *ClientConfig) hostVolumes() map[string]*structs.ClientHostVolumeConfig {
	if len(cl.HostVolumes) == 0 {
		return nil
	}
	out := make(map[string]*structs.ClientHostVolumeConfig, len(cl.HostVolumes))
	for _, hv := range cl.HostVolumes {
		out[hv.Name] = &structs.ClientHostVolumeConfig{Name: hv.Name, Path: hv.Path, ReadOnly: hv.ReadOnly}
	}
	return out
}
