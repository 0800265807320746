package jobspec_test

import (
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/api"
	"github.com/nomad-edge/nomad/jobspec"
)

// An update block on a batch or sysbatch job is refused at its position in
// upstream's words: there is nothing to roll out, and accepting it would
// be a key without effect.
func TestParse_UpdateRefusedForBatch(t *testing.T) {
	for _, typ := range []string{"batch", "sysbatch"} {
		src := "job \"b\" {\n  type = \"" + typ + "\"\n  update {\n    max_parallel = 2\n  }\n  group \"g\" {\n    update {}\n    task \"t\" {\n      driver = \"mock_driver\"\n    }\n  }\n}\n"
		must.Eq(t, []string{
			`u.hcl:3:3: Job type "` + typ + `" does not allow update block`,
			`u.hcl:7:5: Job type "` + typ + `" does not allow update block`,
		}, parseErr(t, "u.hcl", src))
	}
}

// A port's host_network is read into the wire job, for the scheduler to
// place it on a node with that host network.
func TestParse_HostNetwork(t *testing.T) {
	job, err := jobspec.Parse("x.hcl", []byte("job \"a\" {\n  group \"g\" {\n    network {\n      port \"http\" {\n        host_network = \"public\"\n      }\n    }\n  }\n}\n"))
	must.NoError(t, err)
	must.Eq(t, "public", job.TaskGroups[0].Networks[0].DynamicPorts[0].HostNetwork)
}

// A network's mode, hostname and dns block are read into the wire job,
// for the client to give the allocation that namespace, name and
// resolv.conf; a key the dns block does not have is refused by name.
func TestParse_NetworkDNSAndHostname(t *testing.T) {
	src := `job "a" {
  group "g" {
    network {
      mode     = "cni/mynet"
      hostname = "web"
      dns {
        servers  = ["10.0.0.53"]
        searches = ["svc.example"]
        options  = ["ndots:2"]
      }
    }
  }
}
`
	job, err := jobspec.Parse("x.hcl", []byte(src))
	must.NoError(t, err)
	n := job.TaskGroups[0].Networks[0]
	must.Eq(t, "cni/mynet", n.Mode)
	must.Eq(t, "web", n.Hostname)
	must.Eq(t, &api.DNSConfig{Servers: []string{"10.0.0.53"}, Searches: []string{"svc.example"}, Options: []string{"ndots:2"}}, n.DNS)
	errs := parseErr(t, "y.hcl", "job \"a\" {\n  group \"g\" {\n    network {\n      dns {\n        nameservers = []\n      }\n    }\n  }\n}\n")
	must.Len(t, 1, errs)
	must.StrContains(t, errs[0], "nameservers")
}

// Job-level reschedule and migrate blocks are read and, once canonicalized,
// are the defaults of every group, the group's own fields winning, as
// upstream's client merges them.
func TestParse_JobLevelRescheduleAndMigrate(t *testing.T) {
	src := `
job "web" {
  reschedule {
    attempts = 4
    interval = "2h"
  }
  migrate {
    max_parallel = 2
  }
  group "plain" {
    task "t" {
      driver = "mock_driver"
    }
  }
  group "own" {
    reschedule {
      attempts = 1
    }
    migrate {
      health_check = "task_states"
    }
    task "t" {
      driver = "mock_driver"
    }
  }
}
`
	job, err := jobspec.Parse("r.hcl", []byte(src))
	must.NoError(t, err)
	must.Eq(t, 4, *job.Reschedule.Attempts)
	must.Eq(t, 2, *job.Migrate.MaxParallel)
	job.Canonicalize()

	plain, own := job.TaskGroups[0], job.TaskGroups[1]
	must.Eq(t, 4, *plain.ReschedulePolicy.Attempts)
	must.Eq(t, 2*time.Hour, *plain.ReschedulePolicy.Interval)
	must.Eq(t, 2, *plain.Migrate.MaxParallel)
	must.Eq(t, "checks", *plain.Migrate.HealthCheck)

	must.Eq(t, 1, *own.ReschedulePolicy.Attempts)
	must.Eq(t, 2*time.Hour, *own.ReschedulePolicy.Interval)
	must.Eq(t, 2, *own.Migrate.MaxParallel)
	must.Eq(t, "task_states", *own.Migrate.HealthCheck)
}

// shutdown_delay is read at group and task level.
func TestParse_ShutdownDelay(t *testing.T) {
	src := "job \"a\" {\n  group \"g\" {\n    shutdown_delay = \"5s\"\n    task \"t\" {\n      driver = \"mock_driver\"\n      shutdown_delay = \"2s\"\n    }\n  }\n}\n"
	job, err := jobspec.Parse("s.hcl", []byte(src))
	must.NoError(t, err)
	must.Eq(t, new(5*time.Second), job.TaskGroups[0].ShutdownDelay)
	must.Eq(t, 2*time.Second, job.TaskGroups[0].Tasks[0].ShutdownDelay)
}
