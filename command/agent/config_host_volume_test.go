package agent

import (
	"testing"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/nomad/structs"
)

// host_volume blocks parse in HCL and JSON into the client's node
// fingerprint shape (name → path, read_only), and a later file's block of
// the same name replaces the earlier one, as host_network blocks merge.
func TestParseConfig_HostVolumes(t *testing.T) {
	for name, src := range map[string]string{
		"agent.hcl": `
client {
  host_volume "data" {
    path = "/srv/data/"
  }
  host_volume "certs" {
    path      = "/etc/ssl"
    read_only = true
  }
}
`,
		"agent.json": `{"client": {"host_volume": {"data": {"path": "/srv/data/"}, "certs": {"path": "/etc/ssl", "read_only": true}}}}`,
	} {
		t.Run(name, func(t *testing.T) {
			c, err := ParseConfig(name, []byte(src))
			must.NoError(t, err)
			got := DefaultConfig().Merge(c).Client.hostVolumes()
			must.Eq(t, map[string]*structs.ClientHostVolumeConfig{
				"data":  {Name: "data", Path: "/srv/data"},
				"certs": {Name: "certs", Path: "/etc/ssl", ReadOnly: true},
			}, got)
		})
	}

	later, err := ParseConfig("b.hcl", []byte(`client {
  host_volume "data" {
    path      = "/mnt/data"
    read_only = true
  }
}`))
	must.NoError(t, err)
	first, err := ParseConfig("a.hcl", []byte(`client {
  host_volume "data" { path = "/srv/data" }
  host_volume "logs" { path = "/var/log" }
}`))
	must.NoError(t, err)
	merged := DefaultConfig().Merge(first).Merge(later).Client.hostVolumes()
	must.Eq(t, &structs.ClientHostVolumeConfig{Name: "data", Path: "/mnt/data", ReadOnly: true}, merged["data"])
	must.Eq(t, "/var/log", merged["logs"].Path)
}

// A host_volume without a path, with a relative one, with an unknown key
// or twice in one file is refused at its position, naming the volume.
func TestParseConfig_HostVolumeErrors(t *testing.T) {
	for src, want := range map[string]string{
		`client {
  host_volume "data" {
    read_only = true
  }
}`: `client.host_volume "data" needs a path`,
		`client {
  host_volume "data" {
    path = "srv/data"
  }
}`: `agent.hcl:3:12: client.host_volume.data.path: "srv/data" must be an absolute path`,
		`client {
  host_volume "data" {
    path  = "/srv"
    owner = "nobody"
  }
}`: `agent.hcl:4:5`,
		`client {
  host_volume "data" { path = "/a" }
  host_volume "data" { path = "/b" }
}`: `agent.hcl:3:3: duplicate client.host_volume "data" block`,
	} {
		_, err := ParseConfig("agent.hcl", []byte(src))
		must.ErrorContains(t, err, want)
	}
}
