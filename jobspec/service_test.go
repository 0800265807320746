package jobspec_test

import (
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/api"
	"github.com/nomad-edge/nomad/jobspec"
)

// TestParse_Service checks that group and task service blocks, with their
// checks, headers and check_restart, decode into upstream's wire shape, and
// that canonicalizing fills upstream's defaults with provider "nomad".
func TestParse_Service(t *testing.T) {
	src := `job "web" {
  group "g" {
    network {
      port "http" {}
    }
    service {
      name        = "${NOMAD_JOB_NAME}-api"
      port        = "http"
      tags        = ["a", "b"]
      canary_tags = ["canary"]
      task        = "t"
      meta {
        version = "1"
      }
      canary_meta = { version = "2" }
      check_restart {
        limit = 3
        grace = "10s"
      }
      check {
        name     = "alive"
        type     = "http"
        path     = "/health"
        method   = "GET"
        interval = "10s"
        timeout  = "2s"
        header {
          Authorization = ["Bearer x"]
        }
        success_before_passing   = 2
        failures_before_critical = 3
      }
      check {
        type     = "script"
        command  = "/bin/check"
        args     = ["-q"]
        interval = "30s"
        timeout  = "5s"
        on_update = "ignore"
        check_restart {
          limit = 1
        }
      }
    }
    task "t" {
      driver = "raw_exec"
      service {
        port = 8080
        address_mode = "host"
        check {
          type     = "tcp"
          interval = "5s"
          timeout  = "1s"
        }
      }
    }
  }
}
`
	job, err := jobspec.Parse("x.hcl", []byte(src))
	must.NoError(t, err)
	g := job.TaskGroups[0]
	must.Len(t, 1, g.Services)
	s := g.Services[0]
	must.Eq(t, "${NOMAD_JOB_NAME}-api", s.Name)
	must.Eq(t, "http", s.PortLabel)
	must.Eq(t, []string{"a", "b"}, s.Tags)
	must.Eq(t, []string{"canary"}, s.CanaryTags)
	must.Eq(t, "t", s.TaskName)
	must.Eq(t, map[string]string{"version": "1"}, s.Meta)
	must.Eq(t, map[string]string{"version": "2"}, s.CanaryMeta)
	must.Len(t, 2, s.Checks)
	must.Eq(t, map[string][]string{"Authorization": {"Bearer x"}}, s.Checks[0].Header)
	must.Eq(t, 10*time.Second, s.Checks[0].Interval)
	must.Eq(t, 2, s.Checks[0].SuccessBeforePassing)
	must.Eq(t, []string{"-q"}, s.Checks[1].Args)
	must.Eq(t, "8080", g.Tasks[0].Services[0].PortLabel)

	job.Canonicalize()
	must.Eq(t, api.ServiceProviderNomad, s.Provider)
	must.Eq(t, api.AddressModeAuto, s.AddressMode)
	must.Eq(t, api.OnUpdateRequireHealthy, s.Checks[0].OnUpdate)
	must.Eq(t, api.OnUpdateIgnore, s.Checks[1].OnUpdate)
	// The service's check_restart is the default; the check's own fields win.
	must.Eq(t, &api.CheckRestart{Limit: 3, Grace: new(10 * time.Second)}, s.Checks[0].CheckRestart)
	must.Eq(t, &api.CheckRestart{Limit: 1, Grace: new(10 * time.Second)}, s.Checks[1].CheckRestart)
	must.Eq(t, "web-g-t", g.Tasks[0].Services[0].Name)
}

// TestParse_ServiceErrors checks that unknown keys, wrong types and
// provider "consul" are refused with file:line:column and the block's path,
// since a service silently dropped is an instance nobody can find.
func TestParse_ServiceErrors(t *testing.T) {
	src := `job "web" {
  group "g" {
    service {
      provider = "consul"
      connect {}
      check {
        interval = 10
        bogus    = true
        check_restart {
          limit = "x"
        }
      }
    }
  }
}
`
	_, err := jobspec.Parse("x.hcl", []byte(src))
	must.Error(t, err)
	for _, want := range []string{
		`x.hcl:4:18: service block of group "g": provider "consul" is not supported`,
		`x.hcl:5:7: unsupported block "connect" in service block of group "g"`,
		`x.hcl:7:20: invalid duration for "interval" in check 1 of service block of group "g"`,
		`x.hcl:8:9: unsupported attribute "bogus" in check 1 of service block of group "g"`,
		`x.hcl:10:19: invalid value for "limit" in check_restart block of check 1 of service block of group "g": a whole number is required`,
	} {
		must.StrContains(t, err.Error(), want)
	}
}
