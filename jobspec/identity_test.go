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

// TestParse_NamedIdentities checks that named identity blocks go to the
// task's Identities with their audience, beside the default one.
func TestParse_NamedIdentities(t *testing.T) {
	src := `job "web" {
  group "g" {
    task "t" {
      driver = "raw_exec"
      identity {
        env = true
      }
      identity {
        name = "vault"
        aud  = ["vault.io", "backup.example"]
        file = true
        ttl  = "30m"
      }
      identity {
        name        = "mesh"
        aud         = ["mesh.example"]
        env         = true
        change_mode = "restart"
      }
    }
  }
}
`
	j, err := jobspec.Parse("x.hcl", []byte(src))
	must.NoError(t, err)
	task := j.TaskGroups[0].Tasks[0]
	must.Eq(t, &api.WorkloadIdentity{Env: true}, task.Identity)
	must.Eq(t, []*api.WorkloadIdentity{
		{Name: "vault", Audience: []string{"vault.io", "backup.example"}, File: true, TTL: 30 * time.Minute},
		{Name: "mesh", Audience: []string{"mesh.example"}, Env: true, ChangeMode: "restart"},
	}, task.Identities)
}

// TestParse_IdentityRefusals checks that what no identity can be is
// refused at file:line:column rather than silently ignored: aud on the
// default identity, a named one without aud, a name or default used
// twice, a change_mode that does not exist and a signal mode without its
// signal, an unknown attribute.
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
      identity {
        aud = ["y"]
      }
      identity {
        name = "vault"
        aud  = ["z"]
      }
      identity {
        name = "noaud"
      }
      identity {
        name = "default"
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
		`x.hcl:9:25: identity block of task "t": invalid change_mode "reload"; must be one of noop, restart, signal`,
		`x.hcl:10:9: unsupported attribute "bogus" in identity block of task "t"`,
		`x.hcl:13:9: identity block of task "t": aud is not supported on the default identity`,
		`x.hcl:16:16: identity block of task "t": identity "vault" is defined twice`,
		`x.hcl:19:7: identity block of task "t": identity "noaud" needs an aud`,
		`x.hcl:22:7: identity block of task "t": a second default identity`,
		`x.hcl:28:7: identity block of task "u": change_mode "signal" needs a change_signal`,
	} {
		must.StrContains(t, err.Error(), want)
	}
}
