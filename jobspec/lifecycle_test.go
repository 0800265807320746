package jobspec_test

import (
	"testing"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/api"
	"github.com/nomad-edge/nomad/jobspec"
)

// A task's lifecycle block decodes into upstream's Lifecycle wire field;
// a task without one stays a main task (nil).
func TestParse_Lifecycle(t *testing.T) {
	job, err := jobspec.Parse("j.hcl", []byte(`job "j" {
  group "g" {
    task "init" {
      driver = "raw_exec"
      lifecycle {
        hook = "prestart"
      }
    }
    task "proxy" {
      driver = "raw_exec"
      lifecycle {
        hook    = "poststart"
        sidecar = true
      }
    }
    task "main" {
      driver = "raw_exec"
    }
  }
}
`))
	must.NoError(t, err)
	tasks := job.TaskGroups[0].Tasks
	must.Eq(t, &api.TaskLifecycle{Hook: "prestart"}, tasks[0].Lifecycle)
	must.Eq(t, &api.TaskLifecycle{Hook: "poststart", Sidecar: true}, tasks[1].Lifecycle)
	must.Nil(t, tasks[2].Lifecycle)
}

// An invalid or missing hook, a non-bool sidecar and an unknown key are
// each refused at their file:line:column, the invalid hook named.
func TestParse_LifecycleErrorsHavePositions(t *testing.T) {
	lines := parseErr(t, "j.hcl", `job "j" {
  group "g" {
    task "a" {
      driver = "raw_exec"
      lifecycle {
        hook = "prestrt"
      }
    }
    task "b" {
      driver = "raw_exec"
      lifecycle {
        sidecar = true
      }
    }
    task "c" {
      driver = "raw_exec"
      lifecycle {
        hook    = "poststop"
        sidecar = "yes"
        order   = 1
      }
    }
  }
}
`)
	must.Eq(t, []string{
		`j.hcl:6:16: lifecycle block of task "a": invalid hook "prestrt"; hook must be one of "prestart", "poststart", "poststop"`,
		`j.hcl:11:7: lifecycle block of task "b": missing hook = "prestart" | "poststart" | "poststop"`,
		`j.hcl:19:19: invalid value for "sidecar" in lifecycle block of task "c": a bool is required, got string`,
		`j.hcl:20:9: unsupported attribute "order" in lifecycle block of task "c"`,
	}, lines)
}
