package jobspec

import (
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/hashicorp/hcl/v2/hclsyntax"

	"github.com/nomad-edge/nomad/api"
)

// volumeTypes are the values of a group volume's type this project
// implements; "csi" is refused by name.
var volumeTypes = []string{"host"}

// propagationModes are the values of volume_mount.propagation_mode.
var propagationModes = []string{"private", "host-to-task", "bidirectional"}

// volumeNotCSI explains the refusal of the CSI-only keys of a volume block.
const volumeNotCSI = "it is for CSI volumes, and CSI is not implemented by this version; use type = \"host\""

// volume decodes a group's `volume "<name>" { type source read_only }` into
// g.Volumes[name]. The CSI keys and per_alloc are refused at their
// positions; so is a second block of the same name.
func (p *parser) volume(b *hclsyntax.Block, name string, parent string, g *api.TaskGroup) {
	where := fmt.Sprintf("volume %q in %s", name, parent)
	if _, dup := g.Volumes[name]; dup {
		p.errorf(b.LabelRanges[0], "%s: duplicate volume block %q", parent, name)
		return
	}
	v := &api.VolumeRequest{Name: name}
	refuse := func(a *hclsyntax.Attribute) {
		p.errorf(a.NameRange, "%s: %s is not supported: %s", where, a.Name, volumeNotCSI)
	}
	typeSet := false
	p.walk(b.Body, where, schema{
		attrs: map[string]func(*hclsyntax.Attribute){
			"type": func(a *hclsyntax.Attribute) {
				typeSet = true
				s, ok := p.stringVal(a, where)
				if !ok {
					return
				}
				switch {
				case s == "csi":
					p.errorf(a.Expr.Range(), "%s: type \"csi\" is not supported: CSI volumes are not implemented by this version; use type = \"host\"", where)
				case !slices.Contains(volumeTypes, s):
					p.errorf(a.Expr.Range(), "%s: invalid type %q; type must be \"host\"", where, s)
				default:
					v.Type = s
				}
			},
			"source": func(a *hclsyntax.Attribute) {
				if s, ok := p.stringVal(a, where); ok {
					v.Source = s
				}
			},
			"read_only": func(a *hclsyntax.Attribute) {
				if r := p.boolPtr(a, where); r != nil {
					v.ReadOnly = *r
				}
			},
			"per_alloc": func(a *hclsyntax.Attribute) {
				p.errorf(a.NameRange, "%s: per_alloc is not supported: it names a CSI volume per allocation, and CSI is not implemented by this version", where)
			},
			"access_mode":     refuse,
			"attachment_mode": refuse,
		},
		blocks: map[string]blockSpec{
			"mount_options": {decode: func(mb *hclsyntax.Block, _ string) {
				p.errorf(mb.TypeRange, "%s: mount_options is not supported: %s", where, volumeNotCSI)
			}},
		},
	})
	if !typeSet {
		// Upstream has no default type either: its validation refuses
		// an empty one, so say it here, where the block is.
		p.errorf(b.TypeRange, "%s: missing type = \"host\"", where)
	}
	if g.Volumes == nil {
		g.Volumes = map[string]*api.VolumeRequest{}
	}
	g.Volumes[name] = v
}

// volumeMount decodes a task's `volume_mount { volume destination
// read_only propagation_mode }`. That the volume names one of the
// group's is checked by the server, as upstream, so that JSON jobs get
// the same check.
func (p *parser) volumeMount(b *hclsyntax.Block, parent string) *api.VolumeMount {
	m := &api.VolumeMount{}
	where := blockWhere(b.Type, parent)
	destSet := false
	p.walk(b.Body, where, schema{attrs: map[string]func(*hclsyntax.Attribute){
		"volume": func(a *hclsyntax.Attribute) { m.Volume = p.stringPtr(a, where) },
		"destination": func(a *hclsyntax.Attribute) {
			destSet = true
			s, ok := p.stringVal(a, where)
			if !ok {
				return
			}
			if !path.IsAbs(s) {
				p.errorf(a.Expr.Range(), "%s: destination %q must be an absolute path inside the task", where, s)
				return
			}
			m.Destination = &s
		},
		"read_only": func(a *hclsyntax.Attribute) { m.ReadOnly = p.boolPtr(a, where) },
		"propagation_mode": func(a *hclsyntax.Attribute) {
			s, ok := p.stringVal(a, where)
			if !ok {
				return
			}
			if !slices.Contains(propagationModes, s) {
				p.errorf(a.Expr.Range(), "%s: invalid propagation_mode %q; propagation_mode must be one of %s", where, s, strings.Join(quoteAll(propagationModes), ", "))
				return
			}
			m.PropagationMode = &s
		},
	}})
	if m.Volume == nil {
		p.errorf(b.TypeRange, "%s: missing volume = \"<name of a group volume>\"", where)
	}
	if !destSet {
		p.errorf(b.TypeRange, "%s: missing destination", where)
	}
	return m
}
