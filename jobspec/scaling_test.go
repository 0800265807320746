package jobspec_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/jobspec"
)

// TestParse_Scaling checks that a group scaling block keeps its policy body
// whole, in the JSON shape upstream's API gives the Nomad Autoscaler
// (labelled blocks keyed by label inside lists), since the autoscaler
// parses that shape and nothing else.
func TestParse_Scaling(t *testing.T) {
	src := `job "web" {
  group "g" {
    count = 2
    scaling {
      enabled = true
      min     = 1
      max     = 10
      policy {
        cooldown            = "20s"
        evaluation_interval = "5s"
        check "avg_cpu" {
          source = "nomad-apm"
          query  = "avg_cpu"
          strategy "target-value" {
            target = 50
          }
        }
        target {
          ratio = 1.5
        }
      }
    }
    task "t" {
      driver = "raw_exec"
    }
  }
}
`
	job, err := jobspec.Parse("s.hcl", []byte(src))
	must.NoError(t, err)
	s := job.TaskGroups[0].Scaling
	must.NotNil(t, s)
	must.Eq(t, int64(1), *s.Min)
	must.Eq(t, int64(10), *s.Max)
	must.True(t, *s.Enabled)
	got, err := json.Marshal(s.Policy)
	must.NoError(t, err)
	must.EqJSON(t, `{
  "check": [{"avg_cpu": [{"query": "avg_cpu", "source": "nomad-apm", "strategy": [{"target-value": [{"target": 50}]}]}]}],
  "cooldown": "20s",
  "evaluation_interval": "5s",
  "target": [{"ratio": 1.5}]
}`, string(got))
}

// TestParse_ScalingRefusals checks that unknown keys of the scaling block
// and task-level scaling blocks (upstream Enterprise's sizing, which
// nothing here implements) are refused by name and position.
func TestParse_ScalingRefusals(t *testing.T) {
	src := `job "web" {
  group "g" {
    scaling {
      max  = 3
      step = 1
    }
    task "t" {
      driver = "raw_exec"
      scaling "cpu" {
        max = 500
      }
      scaling {
      }
    }
  }
}
`
	_, err := jobspec.Parse("s.hcl", []byte(src))
	must.Error(t, err)
	must.Eq(t, strings.Join([]string{
		`s.hcl:5:7: unsupported attribute "step" in scaling block of group "g"`,
		`s.hcl:9:7: unsupported block "scaling" in task "t": task-level scaling (dynamic application sizing) is not supported; a group's scaling block scales its count`,
		`s.hcl:12:7: unsupported block "scaling" in task "t": task-level scaling (dynamic application sizing) is not supported; a group's scaling block scales its count`,
	}, "\n"), err.Error())
}
