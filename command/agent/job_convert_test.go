package agent

import (
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/jobspec"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// Every field a job file can set must reach the server: a dropped field
// is a setting the user wrote and the cluster ignores.
func TestAPIJobToStructJob_EveryJobspecField(t *testing.T) {
	src := `
job "edge" {
  region      = "eu"
  namespace   = "ops"
  datacenters = ["dc1", "dc2"]
  type        = "batch"
  priority    = 70
  node_pool   = "lte"
  all_at_once = true
  meta { team = "a" }

  constraint {
    attribute = "${attr.kernel.name}"
    value     = "linux"
  }
  affinity {
    attribute = "${node.datacenter}"
    value     = "dc1"
    weight    = 30
  }

  group "sensors" {
    count = 3
    max_client_disconnect        = "2h"
    meta { tier = "1" }

    constraint {
      attribute = "${meta.rack}"
      operator  = "!="
      value     = "r9"
    }
    affinity {
      attribute = "${node.class}"
      value     = "big"
      weight    = -20
    }
    restart {
      attempts = 4
      interval = "10m"
      delay    = "20s"
      mode     = "delay"
    }
    reschedule {
      attempts       = 2
      interval       = "1h"
      delay          = "10s"
      delay_function = "fibonacci"
      max_delay      = "5m"
      unlimited      = false
    }
    ephemeral_disk {
      size    = 500
      sticky  = true
      migrate = true
    }

    task "reader" {
      driver       = "raw_exec"
      kill_timeout = "9s"
      kill_signal  = "SIGINT"
      leader       = true
      logs {
        max_files     = 4
        max_file_size = 2
      }
      user         = "app"
      config {
        command = "/bin/sleep"
        args    = ["60"]
      }
      env  { MODE = "fast" }
      meta { owner = "b" }
      resources {
        cpu        = 250
        memory     = 128
        memory_max = 256
      }
      restart {
        attempts = 1
      }
      constraint {
        attribute = "${attr.cpu.arch}"
        value     = "arm64"
      }
    }
  }

  group "uplink" {
    stop_after_client_disconnect = "90s"
    task "send" {
      driver = "mock_driver"
      resources { cores = 2 }
    }
    task "prep" {
      driver = "mock_driver"
      lifecycle {
        hook    = "prestart"
        sidecar = true
      }
    }
  }

  group "cache" {
    disconnect {
      lost_after      = "6h"
      replace         = false
      reconcile       = "keep_original"
      offline_restart = false
    }
    task "c" {
      driver = "mock_driver"
    }
  }

  group "relay" {
    disconnect {
      stop_on_client_after = "1m"
    }
    task "r" {
      driver = "mock_driver"
    }
  }
}
`
	apiJob, err := jobspec.Parse("edge.nomad.hcl", []byte(src))
	must.NoError(t, err)
	got := APIJobToStructJob(apiJob)

	// The batch defaults fill what the file leaves out, merged field by
	// field under what it sets.
	batchRestart := func(attempts int) *structs.RestartPolicy {
		return &structs.RestartPolicy{Attempts: attempts, Interval: 24 * time.Hour, Delay: 15 * time.Second, Mode: "fail"}
	}
	batchReschedule := &structs.ReschedulePolicy{Attempts: 1, Interval: 24 * time.Hour, Delay: 5 * time.Second, DelayFunction: "constant"}
	groupRestart := &structs.RestartPolicy{Attempts: 4, Interval: 10 * time.Minute, Delay: 20 * time.Second, Mode: "delay"}
	disk := &structs.EphemeralDisk{SizeMB: 300}

	want := &structs.Job{
		ID: "edge", Name: "edge", Namespace: "ops", Region: "eu", Type: "batch", Priority: 70,
		AllAtOnce: true, Datacenters: []string{"dc1", "dc2"}, NodePool: "lte",
		Constraints: []*structs.Constraint{{LTarget: "${attr.kernel.name}", RTarget: "linux", Operand: "="}},
		Affinities:  []*structs.Affinity{{LTarget: "${node.datacenter}", RTarget: "dc1", Operand: "=", Weight: 30}},
		Meta:        map[string]string{"team": "a"},
		TaskGroups: []*structs.TaskGroup{
			{
				Name: "sensors", Count: 3,
				Constraints:         []*structs.Constraint{{LTarget: "${meta.rack}", RTarget: "r9", Operand: "!="}},
				Affinities:          []*structs.Affinity{{LTarget: "${node.class}", RTarget: "big", Operand: "=", Weight: -20}},
				RestartPolicy:       groupRestart,
				ReschedulePolicy:    &structs.ReschedulePolicy{Attempts: 2, Interval: time.Hour, Delay: 10 * time.Second, DelayFunction: "fibonacci", MaxDelay: 5 * time.Minute},
				EphemeralDisk:       &structs.EphemeralDisk{SizeMB: 500, Sticky: true, Migrate: true},
				Meta:                map[string]string{"tier": "1"},
				MaxClientDisconnect: new(2 * time.Hour),
				Tasks: []*structs.Task{{
					Name: "reader", Driver: "raw_exec",
					Config:        map[string]any{"command": "/bin/sleep", "args": []any{"60"}},
					Env:           map[string]string{"MODE": "fast"},
					Meta:          map[string]string{"owner": "b"},
					Resources:     &structs.Resources{CPU: 250, MemoryMB: 128, MemoryMaxMB: 256},
					RestartPolicy: &structs.RestartPolicy{Attempts: 1, Interval: 10 * time.Minute, Delay: 20 * time.Second, Mode: "delay"},
					Constraints:   []*structs.Constraint{{LTarget: "${attr.cpu.arch}", RTarget: "arm64", Operand: "="}},
					KillTimeout:   9 * time.Second, KillSignal: "SIGINT", Leader: true, User: "app",
					LogConfig: &structs.LogConfig{MaxFiles: 4, MaxFileSizeMB: 2},
				}},
			},
			{
				Name: "uplink", Count: 1, RestartPolicy: batchRestart(3), ReschedulePolicy: batchReschedule, EphemeralDisk: disk,
				StopAfterClientDisconnect: new(90 * time.Second),
				Tasks: []*structs.Task{{
					Name: "send", Driver: "mock_driver", Resources: &structs.Resources{Cores: 2, MemoryMB: 300},
					RestartPolicy: batchRestart(3), KillTimeout: 5 * time.Second, LogConfig: structs.DefaultLogConfig(),
				}, {
					Name: "prep", Driver: "mock_driver", Resources: &structs.Resources{CPU: 100, MemoryMB: 300},
					RestartPolicy: batchRestart(3), KillTimeout: 5 * time.Second, LogConfig: structs.DefaultLogConfig(),
					Lifecycle: &structs.TaskLifecycleConfig{Hook: "prestart", Sidecar: true},
				}},
			},
			{
				Name: "cache", Count: 1, RestartPolicy: batchRestart(3), ReschedulePolicy: batchReschedule, EphemeralDisk: disk,
				Disconnect: &structs.DisconnectStrategy{LostAfter: 6 * time.Hour, Replace: new(false), Reconcile: "keep_original", OfflineRestart: new(false)},
				Tasks: []*structs.Task{{
					Name: "c", Driver: "mock_driver", Resources: &structs.Resources{CPU: 100, MemoryMB: 300},
					RestartPolicy: batchRestart(3), KillTimeout: 5 * time.Second, LogConfig: structs.DefaultLogConfig(),
				}},
			},
			{
				Name: "relay", Count: 1, RestartPolicy: batchRestart(3), ReschedulePolicy: batchReschedule, EphemeralDisk: disk,
				Disconnect: &structs.DisconnectStrategy{StopOnClientAfter: new(time.Minute), Replace: new(true), Reconcile: "best_score"},
				Tasks: []*structs.Task{{
					Name: "r", Driver: "mock_driver", Resources: &structs.Resources{CPU: 100, MemoryMB: 300},
					RestartPolicy: batchRestart(3), KillTimeout: 5 * time.Second, LogConfig: structs.DefaultLogConfig(),
				}},
			},
		},
	}
	must.Eq(t, want, got)

	// And the server accepts what we send.
	got.Canonicalize()
	must.NoError(t, got.Validate())
}
