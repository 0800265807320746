package jobspec_test

import (
	"testing"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/jobspec"
)

// The periodic, parameterized and dispatch_payload blocks decode into
// upstream's wire fields, the legacy `cron` included.
func TestParse_PeriodicAndParameterized(t *testing.T) {
	src := `job "nightly" {
  type = "batch"
  periodic {
    crons            = ["0 3 * * *", "30 12 * * 1-5"]
    prohibit_overlap = true
    time_zone        = "Europe/Berlin"
    enabled          = false
  }
  parameterized {
    payload       = "required"
    meta_required = ["site"]
    meta_optional = ["level"]
  }
  group "g" {
    task "t" {
      driver = "raw_exec"
      dispatch_payload {
        file = "in/input.json"
      }
    }
  }
}
`
	job, err := jobspec.Parse("j.hcl", []byte(src))
	must.NoError(t, err)
	p := job.Periodic
	must.Eq(t, []string{"0 3 * * *", "30 12 * * 1-5"}, p.Specs)
	must.True(t, *p.ProhibitOverlap)
	must.Eq(t, "Europe/Berlin", *p.TimeZone)
	must.False(t, *p.Enabled)
	must.Eq(t, "required", job.ParameterizedJob.Payload)
	must.Eq(t, []string{"site"}, job.ParameterizedJob.MetaRequired)
	must.Eq(t, []string{"level"}, job.ParameterizedJob.MetaOptional)
	must.Eq(t, "in/input.json", job.TaskGroups[0].Tasks[0].DispatchPayload.File)

	legacy, err := jobspec.Parse("j.hcl", []byte(`job "j" {
  periodic {
    cron = "@daily"
  }
  group "g" {
    task "t" { driver = "raw_exec" }
  }
}
`))
	must.NoError(t, err)
	must.Eq(t, "@daily", *legacy.Periodic.Spec)
	legacy.Canonicalize()
	must.True(t, *legacy.Periodic.Enabled, must.Sprint("enabled by default, as upstream"))
	must.Eq(t, "UTC", *legacy.Periodic.TimeZone)
}

// Mistakes in the blocks are reported at their file:line:column, each
// naming the field, so an operator finds the line to fix.
func TestParse_PeriodicErrorsHavePositions(t *testing.T) {
	cases := []struct {
		name string
		src  string
		want []string
	}{
		{"unknown time zone", `job "j" {
  periodic {
    crons     = ["@hourly"]
    time_zone = "Mars/Olympus"
  }
}
`, []string{`j.hcl:4:17: periodic block of job "j": time_zone "Mars/Olympus" is not a known time zone`}},
		{"cron and crons", `job "j" {
  periodic {
    cron  = "@daily"
    crons = ["@hourly"]
  }
}
`, []string{`j.hcl:2:3: periodic block of job "j": set either cron or crons, not both`}},
		{"no expression", `job "j" {
  periodic {
    prohibit_overlap = true
  }
}
`, []string{`j.hcl:2:3: periodic block of job "j": missing crons`}},
		{"unknown attribute", `job "j" {
  periodic {
    crons   = ["@daily"]
    jitter  = "5m"
  }
}
`, []string{`j.hcl:4:5: unsupported attribute "jitter"`}},
		{"bad payload mode", `job "j" {
  parameterized {
    payload = "sometimes"
  }
}
`, []string{`j.hcl:3:15: parameterized block of job "j": payload must be one of "optional", "required", "forbidden" (got "sometimes")`}},
		{"payload outside local", `job "j" {
  group "g" {
    task "t" {
      driver = "raw_exec"
      dispatch_payload {
        file = "../../etc/cron.d/x"
      }
    }
  }
}
`, []string{`j.hcl:6:16: dispatch_payload block of task "t": file "../../etc/cron.d/x" must be a relative path inside the task's local/ directory`}},
		{"payload without file", `job "j" {
  group "g" {
    task "t" {
      driver = "raw_exec"
      dispatch_payload {}
    }
  }
}
`, []string{`j.hcl:5:7: dispatch_payload block of task "t": missing file`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := jobspec.Parse("j.hcl", []byte(tc.src))
			must.Error(t, err)
			for _, w := range tc.want {
				must.StrContains(t, err.Error(), w)
			}
		})
	}
}
