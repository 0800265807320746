package jobspec_test

import (
	"testing"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/api"
	"github.com/nomad-edge/nomad/jobspec"
)

// TestParse_Network checks the group network block in upstream's wire
// shape: ports with static are reserved, the others dynamic.
func TestParse_Network(t *testing.T) {
	src := `job "web" {
  group "g" {
    network {
      mode = "host"
      port "http" { to = 8080 }
      port "admin" {
        static = 9090
        to     = 90
      }
    }
    task "t" {
      driver = "docker"
    }
  }
}
`
	job, err := jobspec.Parse("x.hcl", []byte(src))
	must.NoError(t, err)
	must.Eq(t, []*api.NetworkResource{{
		Mode:          "host",
		ReservedPorts: []api.Port{{Label: "admin", Value: 9090, To: 90}},
		DynamicPorts:  []api.Port{{Label: "http", To: 8080}},
	}}, job.TaskGroups[0].Networks)
}

// TestParse_NetworkUnknownKey checks that an unimplemented key in a port
// is refused with its position.
func TestParse_NetworkUnknownKey(t *testing.T) {
	src := "job \"web\" {\n  group \"g\" {\n    network {\n      port \"http\" {\n        bogus = 1\n      }\n      cni {}\n    }\n  }\n}\n"
	_, err := jobspec.Parse("x.hcl", []byte(src))
	must.Error(t, err)
	must.StrContains(t, err.Error(), `x.hcl:5:9: unsupported attribute "bogus" in port "http" of network block of group "g"`)
	must.StrContains(t, err.Error(), `x.hcl:7:7: unsupported block "cni" in network block of group "g"`)
}
