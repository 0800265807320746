package jobspec_test

import (
	"testing"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/api"
	"github.com/nomad-edge/nomad/jobspec"
)

// TestParse_Identity checks that a task's identity block reaches the api
// task with env and file, the two ways the default identity is handed over.
func TestParse_Identity(t *testing.T) {
	src := `job "web" {
  group "g" {
    task "t" {
      driver = "raw_exec"
      identity {
        name        = "default"
        env         = true
        file        = true
        change_mode = "noop"
      }
    }
  }
}
`
	j, err := jobspec.Parse("x.hcl", []byte(src))
	must.NoError(t, err)
	must.Eq(t, &api.WorkloadIdentity{Name: "default", Env: true, File: true, ChangeMode: "noop"}, j.TaskGroups[0].Tasks[0].Identity)
}

// TestParse_IdentityRefusals checks that identity fields nothing honours
// yet are refused by name at file:line:column rather than silently
// ignored (a ttl the servers do not apply would be a lie).
func TestParse_IdentityRefusals(t *testing.T) {
	src := `job "web" {
  group "g" {
    task "t" {
      driver = "raw_exec"
      identity {
        name          = "vault"
        aud           = ["x"]
        ttl           = "1h"
        change_mode   = "signal"
        change_signal = "SIGHUP"
        bogus         = 1
      }
    }
  }
}
`
	_, err := jobspec.Parse("x.hcl", []byte(src))
	must.Error(t, err)
	for _, want := range []string{
		`x.hcl:6:25: identity block of task "t": name "vault" is not supported`,
		`x.hcl:7:9: identity block of task "t": aud is not supported`,
		`x.hcl:8:9: identity block of task "t": ttl is not supported`,
		`x.hcl:9:25: identity block of task "t": change_mode "signal" is not supported`,
		`x.hcl:10:9: identity block of task "t": change_signal is not supported`,
		`x.hcl:11:9: unsupported attribute "bogus" in identity block of task "t"`,
	} {
		must.StrContains(t, err.Error(), want)
	}
}
