package jobspec_test

import (
	"testing"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/api"
	"github.com/nomad-edge/nomad/jobspec"
)

// spread blocks at job and group level, with targets, and a
// distinct_property limit parse into upstream's API shape; a bad target
// is named with its position.
func TestParse_SpreadAndDistinctProperty(t *testing.T) {
	src := `job "web" {
  spread {
    attribute = "${node.datacenter}"
    weight    = 100
    target "dc1" {
      percent = 70
    }
    target "dc2" {
      percent = 30
    }
  }
  group "g" {
    spread {
      attribute = "${meta.rack}"
    }
    constraint {
      distinct_property = "${meta.rack}"
      value             = "2"
    }
    task "t" {
      driver = "mock_driver"
    }
  }
}
`
	job, err := jobspec.Parse("s.hcl", []byte(src))
	must.NoError(t, err)
	must.Eq(t, []*api.Spread{{Attribute: "${node.datacenter}", Weight: new(int8(100)), SpreadTarget: []*api.SpreadTarget{
		{Value: "dc1", Percent: 70}, {Value: "dc2", Percent: 30}}}}, job.Spreads)
	must.Eq(t, []*api.Spread{{Attribute: "${meta.rack}"}}, job.TaskGroups[0].Spreads)
	must.Eq(t, []*api.Constraint{{LTarget: "${meta.rack}", RTarget: "2", Operand: "distinct_property"}}, job.TaskGroups[0].Constraints)

	lines := parseErr(t, "b.hcl", "job \"a\" {\n  spread {\n    attribute = \"x\"\n    target \"dc1\" {\n      percent = 170\n    }\n    bogus = 1\n  }\n}\n")
	must.Len(t, 2, lines)
	must.StrContains(t, lines[0], "b.hcl:5:")
	must.StrContains(t, lines[1], `b.hcl:7:5: unsupported attribute "bogus"`)
}
