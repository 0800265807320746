package jobspec_test

import (
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/api"
	"github.com/nomad-edge/nomad/jobspec"
)

// TestParse_Identity checks that a task's identity block reaches the api
// task with env and file, the two ways the default identity is handed
// over, and ttl and change_mode with its signal, what a renewal does.
func TestParse_Identity(t *testing.T) {
	src := `job "web" {
  group "g" {
    task "t" {
      driver = "raw_exec"
      identity {
        name          = "default"
        env           = true
        file          = true
        ttl           = "2h"
        change_mode   = "signal"
        change_signal = "SIGHUP"
      }
    }
  }
}
`
	j, err := jobspec.Parse("x.hcl", []byte(src))
	must.NoError(t, err)
	must.Eq(t, &api.WorkloadIdentity{Name: "default", Env: true, File: true, TTL: 2 * time.Hour, ChangeMode: "signal", ChangeSignal: "SIGHUP"},
		j.TaskGroups[0].Tasks[0].Identity)
}

// TestParse_IdentityRefusals checks that identity fields nothing honours
// yet (a named identity, aud) are refused by name at file:line:column
// rather than silently ignored, as are a change_mode that does not exist
// and a signal mode without its signal.
func TestParse_IdentityRefusals(t *testing.T) {
	src := `job "web" {
  group "g" {
    task "t" {
      driver = "raw_exec"
      identity {
        name          = "vault"
        aud           = ["x"]
        ttl           = "1h"
        change_mode   = "reload"
        bogus         = 1
      }
    }
    task "u" {
      driver = "raw_exec"
      identity {
        change_mode = "signal"
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
		`x.hcl:9:25: identity block of task "t": invalid change_mode "reload"; must be one of noop, restart, signal`,
		`x.hcl:10:9: unsupported attribute "bogus" in identity block of task "t"`,
		`x.hcl:15:7: identity block of task "u": change_mode "signal" needs a change_signal`,
	} {
		must.StrContains(t, err.Error(), want)
	}
}
