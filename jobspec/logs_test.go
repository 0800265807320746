package jobspec_test

import (
	"testing"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/jobspec"
)

// The logs block sets the task's rotation; what it does not set keeps
// upstream's default when the job is canonicalized, and an attribute this
// version does not implement is refused with its position.
func TestParse_LogsBlock(t *testing.T) {
	src := `job "j" {
  group "g" {
    task "t" {
      driver = "raw_exec"
      logs {
        max_files = 3
      }
    }
  }
}
`
	job, err := jobspec.Parse("j.hcl", []byte(src))
	must.NoError(t, err)
	lc := job.TaskGroups[0].Tasks[0].LogConfig
	must.Eq(t, 3, *lc.MaxFiles)
	must.Nil(t, lc.MaxFileSizeMB)
	job.Canonicalize()
	must.Eq(t, 10, *job.TaskGroups[0].Tasks[0].LogConfig.MaxFileSizeMB)

	_, err = jobspec.Parse("j.hcl", []byte(`job "j" {
  group "g" {
    task "t" {
      driver = "raw_exec"
      logs {
        disabled = true
      }
    }
  }
}
`))
	must.ErrorContains(t, err, "j.hcl:6:9")
	must.ErrorContains(t, err, "disabled")
}
