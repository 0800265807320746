package jobspec_test

import (
	"testing"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/api"
	"github.com/nomad-edge/nomad/jobspec"
)

// A group's host volume and a task's volume_mount decode into upstream's
// wire shapes (Volumes by name, VolumeMounts), unset mount fields left nil
// for Canonicalize, as upstream.
func TestParse_Volumes(t *testing.T) {
	job, err := jobspec.Parse("j.hcl", []byte(`job "j" {
  group "g" {
    volume "data" {
      type      = "host"
      source    = "fleet-data"
      read_only = true
    }
    volume "logs" {
      type   = "host"
      source = "logs"
    }
    task "t" {
      driver = "exec"
      volume_mount {
        volume      = "data"
        destination = "/srv/data"
      }
      volume_mount {
        volume           = "logs"
        destination      = "/var/log/app"
        read_only        = false
        propagation_mode = "host-to-task"
      }
    }
  }
}
`))
	must.NoError(t, err)
	g := job.TaskGroups[0]
	must.Eq(t, map[string]*api.VolumeRequest{
		"data": {Name: "data", Type: "host", Source: "fleet-data", ReadOnly: true},
		"logs": {Name: "logs", Type: "host", Source: "logs"},
	}, g.Volumes)
	must.Eq(t, []*api.VolumeMount{
		{Volume: new("data"), Destination: new("/srv/data")},
		{Volume: new("logs"), Destination: new("/var/log/app"), ReadOnly: new(false), PropagationMode: new("host-to-task")},
	}, g.Tasks[0].VolumeMounts)
}

// CSI, per_alloc and the CSI-only keys are refused by name at their
// positions, as are bad values and missing keys: a copied upstream job
// file learns what does nothing here before it runs.
func TestParse_VolumeErrorsHavePositions(t *testing.T) {
	lines := parseErr(t, "j.hcl", `job "j" {
  group "g" {
    volume "a" {
      type = "csi"
    }
    volume "b" {
      type        = "host"
      source      = "b"
      per_alloc   = true
      access_mode = "single-node-writer"
      mount_options {
        fs_type = "ext4"
      }
    }
    volume "c" {
      source = "c"
    }
    volume "c" {
      type = "host"
    }
    task "t" {
      driver = "exec"
      volume_mount {
        volume           = "b"
        destination      = "relative/path"
        propagation_mode = "shared"
      }
      volume_mount {
        read_only = "yes"
      }
    }
  }
}
`)
	must.Eq(t, []string{
		`j.hcl:4:14: volume "a" in group "g": type "csi" is not supported: CSI volumes are not implemented by this version; use type = "host"`,
		`j.hcl:9:7: volume "b" in group "g": per_alloc is not supported: it names a CSI volume per allocation, and CSI is not implemented by this version`,
		`j.hcl:10:7: volume "b" in group "g": access_mode is not supported: it is for CSI volumes, and CSI is not implemented by this version; use type = "host"`,
		`j.hcl:11:7: volume "b" in group "g": mount_options is not supported: it is for CSI volumes, and CSI is not implemented by this version; use type = "host"`,
		`j.hcl:15:5: volume "c" in group "g": missing type = "host"`,
		`j.hcl:18:12: group "g": duplicate volume block "c"`,
		`j.hcl:25:28: volume_mount block of task "t": destination "relative/path" must be an absolute path inside the task`,
		`j.hcl:26:28: volume_mount block of task "t": invalid propagation_mode "shared"; propagation_mode must be one of "private", "host-to-task", "bidirectional"`,
		`j.hcl:28:7: volume_mount block of task "t": missing volume = "<name of a group volume>"`,
		`j.hcl:28:7: volume_mount block of task "t": missing destination`,
		`j.hcl:29:21: invalid value for "read_only" in volume_mount block of task "t": a bool is required, got string`,
	}, lines)
}
