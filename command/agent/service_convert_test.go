package agent

import (
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/jobspec"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// TestConvertServices_EveryField checks that every service and check key a
// job file can set reaches the server's model, and that the result
// validates: a dropped check field is a check that never runs as written.
func TestConvertServices_EveryField(t *testing.T) {
	src := `
job "edge" {
  group "g" {
    network {
      port "http" {}
    }
    service {
      name         = "api"
      port         = "http"
      tags         = ["t"]
      canary_tags  = ["c"]
      address      = "10.0.0.1"
      task         = "web"
      on_update    = "ignore_warnings"
      meta { a = "1" }
      canary_meta { b = "2" }
      check_restart {
        limit = 2
        grace = "5s"
        ignore_warnings = true
      }
      check {
        name            = "h"
        type            = "http"
        path            = "/h"
        protocol        = "https"
        port            = "http"
        method          = "POST"
        interval        = "3s"
        timeout         = "1s"
        initial_status  = "warning"
        tls_skip_verify = true
        address_mode    = "host"
        success_before_passing   = 2
        failures_before_critical = 4
        header { X = ["y"] }
      }
      check {
        type     = "script"
        command  = "/bin/true"
        args     = ["a"]
        task     = "web"
        interval = "3s"
        timeout  = "1s"
      }
    }
    task "web" {
      driver = "raw_exec"
      service {
        port = "http"
      }
    }
  }
}`
	aj, err := jobspec.Parse("x.hcl", []byte(src))
	must.NoError(t, err)
	job := APIJobToStructJob(aj)
	job.Canonicalize()
	must.NoError(t, job.Validate())
	tg := job.TaskGroups[0]
	must.Eq(t, &structs.Service{
		Name: "api", Tags: []string{"t"}, CanaryTags: []string{"c"}, PortLabel: "http", AddressMode: "auto",
		Address: "10.0.0.1", Meta: map[string]string{"a": "1"}, CanaryMeta: map[string]string{"b": "2"},
		TaskName: "web", OnUpdate: "ignore_warnings", Provider: "nomad",
		Checks: []*structs.ServiceCheck{{
			Name: "h", Type: "http", Path: "/h", Protocol: "https", PortLabel: "http", AddressMode: "host",
			Method: "POST", Header: map[string][]string{"X": {"y"}}, Interval: 3 * time.Second, Timeout: time.Second,
			InitialStatus: "warning", TLSSkipVerify: true, SuccessBeforePassing: 2, FailuresBeforeCritical: 4,
			OnUpdate:     "ignore_warnings",
			CheckRestart: &structs.CheckRestart{Limit: 2, Grace: 5 * time.Second, IgnoreWarnings: true},
		}, {
			Type: "script", Command: "/bin/true", Args: []string{"a"}, TaskName: "web",
			Interval: 3 * time.Second, Timeout: time.Second, OnUpdate: "ignore_warnings",
			CheckRestart: &structs.CheckRestart{Limit: 2, Grace: 5 * time.Second, IgnoreWarnings: true},
		}},
	}, tg.Services[0])
	must.Eq(t, "edge-g-web", tg.Tasks[0].Services[0].Name)
}
