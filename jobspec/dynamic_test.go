package jobspec_test

import (
	"testing"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/api"
	"github.com/nomad-edge/nomad/jobspec"
)

// Dynamic blocks generate constraint blocks and labelled port blocks from
// variables, with the default and a named iterator, nested dynamic blocks
// and dynamic blocks in a driver config: the blocks land exactly as if
// written out.
func TestDynamic_Generates(t *testing.T) {
	src := `
variable "kernels" {
  type    = list(string)
  default = ["linux", "freebsd"]
}
variable "ports" {
  type    = map(number)
  default = { http = 8080, admin = 9090 }
}
job "a" {
  dynamic "constraint" {
    for_each = var.kernels
    content {
      attribute = "${attr.kernel.name}"
      operator  = "!="
      value     = constraint.value
    }
  }
  group "g" {
    network {
      dynamic "port" {
        for_each = var.ports
        iterator = p
        labels   = [p.key]
        content {
          to = p.value
        }
      }
    }
    task "t" {
      driver = "mock_driver"
      config {
        dynamic "mount" {
          for_each = ["a", "b"]
          content {
            source = "${NOMAD_TASK_DIR}/${mount.value}"
            dynamic "opt" {
              for_each = range(mount.key + 1)
              content {
                n = "${mount.value}${opt.value}"
              }
            }
          }
        }
      }
    }
  }
}
`
	job, err := jobspec.Parse("d.hcl", []byte(src))
	must.NoError(t, err)
	must.Eq(t, []*api.Constraint{
		{LTarget: "${attr.kernel.name}", Operand: "!=", RTarget: "linux"},
		{LTarget: "${attr.kernel.name}", Operand: "!=", RTarget: "freebsd"},
	}, job.Constraints)
	// Map keys iterate in lexical order.
	must.Eq(t, []api.Port{{Label: "admin", To: 9090}, {Label: "http", To: 8080}}, job.TaskGroups[0].Networks[0].DynamicPorts)
	must.Eq[any](t, []map[string]any{
		{"source": "${NOMAD_TASK_DIR}/a", "opt": []map[string]any{{"n": "a0"}}},
		{"source": "${NOMAD_TASK_DIR}/b", "opt": []map[string]any{{"n": "b0"}, {"n": "b1"}}},
	}, job.TaskGroups[0].Tasks[0].Config["mount"])
}

// An empty for_each generates nothing, and a singleton block generated
// twice is the duplicate it would be if written out.
func TestDynamic_EmptyAndDuplicate(t *testing.T) {
	job, err := jobspec.Parse("d.hcl", []byte("job \"a\" {\n  dynamic \"constraint\" {\n    for_each = []\n    content {\n      attribute = \"x\"\n    }\n  }\n}\n"))
	must.NoError(t, err)
	must.SliceEmpty(t, job.Constraints)

	src := "job \"a\" {\n  group \"g\" {\n    dynamic \"restart\" {\n      for_each = [1, 2]\n      content {\n        attempts = restart.value\n      }\n    }\n  }\n}\n"
	must.Eq(t, []string{`d.hcl:3:13: duplicate restart block in group "g"; the first is at d.hcl:3:13`}, parseErr(t, "d.hcl", src))
}

// Mistakes in dynamic blocks are errors at their positions.
func TestDynamic_Errors(t *testing.T) {
	cases := []struct {
		name string
		src  string
		want []string
	}{
		{"no for_each", "job \"a\" {\n  dynamic \"constraint\" {\n    content {}\n  }\n}\n",
			[]string{`d.hcl:2:3: dynamic "constraint" block of job "a" needs for_each, the collection to generate blocks from`}},
		{"no content", "job \"a\" {\n  dynamic \"constraint\" {\n    for_each = [1]\n  }\n}\n",
			[]string{`d.hcl:2:3: dynamic "constraint" block of job "a" needs a content block, the body of each generated block`}},
		{"no label", "job \"a\" {\n  dynamic {\n    for_each = [1]\n    content {}\n  }\n}\n",
			[]string{`d.hcl:2:3: dynamic block in job "a" needs exactly one label, the type of the blocks to generate: dynamic "<type>" { ... }`}},
		{"block the parent does not take", "job \"a\" {\n  dynamic \"task\" {\n    for_each = [1]\n    content {}\n  }\n}\n",
			[]string{`d.hcl:2:11: dynamic block in job "a" generates "task" blocks, which job "a" does not take`}},
		{"for_each not a collection", "job \"a\" {\n  dynamic \"constraint\" {\n    for_each = 3\n    content {}\n  }\n}\n",
			[]string{`d.hcl:3:16: invalid for_each in dynamic "constraint" block of job "a": a list, set, map or object is required, got number`}},
		{"missing labels", "job \"a\" {\n  group \"g\" {\n    network {\n      dynamic \"port\" {\n        for_each = [1]\n        content {}\n      }\n    }\n  }\n}\n",
			[]string{`d.hcl:4:15: port block in network block of group "g" needs exactly one label, the port label: port "<name>" { ... }`}},
		{"bad iterator", "job \"a\" {\n  dynamic \"constraint\" {\n    for_each = [1]\n    iterator = \"c\"\n    content {}\n  }\n}\n",
			[]string{`d.hcl:4:16: invalid iterator in dynamic "constraint" block of job "a": a bare name is required, such as iterator = item`}},
		{"wrong type in content", "job \"a\" {\n  group \"g\" {\n    dynamic \"restart\" {\n      for_each = [\"x\"]\n      content {\n        attempts = restart.value\n      }\n    }\n  }\n}\n",
			[]string{`d.hcl:6:20: invalid value for "attempts" in restart block of group "g": a whole number is required, got string`}},
		{"too many blocks", "job \"a\" {\n  group \"g\" {\n    task \"t\" {\n      config {\n        dynamic \"a\" {\n          for_each = range(100)\n          content {\n            dynamic \"b\" {\n              for_each = range(200)\n              content {}\n            }\n          }\n        }\n      }\n    }\n  }\n}\n",
			[]string{`d.hcl:9:26: dynamic blocks in this file generate more than 10000 blocks`}},
		{"same mistake in every element said once", "job \"a\" {\n  dynamic \"constraint\" {\n    for_each = [1, 2, 3]\n    content {\n      colour = 1\n    }\n  }\n}\n",
			[]string{`d.hcl:5:7: unsupported attribute "colour" in constraint block of job "a"`}},
		{"iterator out of scope", "job \"a\" {\n  dynamic \"constraint\" {\n    for_each = [1]\n    content {}\n  }\n  region = constraint.value\n}\n",
			[]string{`d.hcl:6:12: unknown reference constraint.value; to leave an interpolation for the client, quote it: "${constraint.value}"`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			must.Eq(t, tc.want, parseErr(t, "d.hcl", tc.src))
		})
	}
}
