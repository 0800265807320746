package jobspec_test

import (
	"strings"
	"testing"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/helper/nesting"
	"github.com/nomad-edge/nomad/jobspec"
)

// jobWithConfig is a minimal job file whose task config holds attr.
func jobWithConfig(attr string) string {
	return `job "deep" {
  group "g" {
    task "t" {
      driver = "mock_driver"
      config {
        x = ` + attr + `
      }
    }
  }
}
`
}

// A job file of 100,000 nested parentheses once overflowed the parser's
// stack and killed the agent that parsed it (issue 5); it must be a parse
// error naming the limit, before the recursive parser ever sees it.
func TestParse_DeepNestingRefused(t *testing.T) {
	const n = 100_000
	cases := map[string]string{
		"parentheses":    strings.Repeat("(", n) + "1" + strings.Repeat(")", n),
		"lists":          strings.Repeat("[", n) + strings.Repeat("]", n),
		"objects":        strings.Repeat("{a=", n) + "1" + strings.Repeat("}", n),
		"interpolations": strings.Repeat(`"${`, n) + "1" + strings.Repeat(`}"`, n),
		"unary":          strings.Repeat("!", n) + "true",
		"negations":      strings.Repeat("-", n) + "1",
		"conditionals":   strings.Repeat("true ? 1 : ", n) + "2",
		"unclosed":       strings.Repeat("(", n),
	}
	for name, expr := range cases {
		t.Run(name, func(t *testing.T) {
			lines := parseErr(t, "deep.nomad.hcl", jobWithConfig(expr))
			must.SliceLen(t, 1, lines)
			must.StrContains(t, lines[0], "deep.nomad.hcl:6:")
			must.StrContains(t, lines[0], "nesting deeper than 64 levels")
		})
	}
}

// Blocks count too: a config block nested beyond the limit is refused
// with the position of the block that crossed it.
func TestParse_DeepBlocksRefused(t *testing.T) {
	var b strings.Builder
	b.WriteString("job \"deep\" {\n group \"g\" {\n  task \"t\" {\n   driver = \"mock_driver\"\n   config {\n")
	for range nesting.MaxDepth {
		b.WriteString("x {\n")
	}
	for range nesting.MaxDepth {
		b.WriteString("}\n")
	}
	b.WriteString("}\n}\n}\n}\n")
	lines := parseErr(t, "blocks.nomad.hcl", b.String())
	must.SliceLen(t, 1, lines)
	must.StrContains(t, lines[0], "blocks.nomad.hcl:")
	must.StrContains(t, lines[0], "nesting deeper than 64 levels")
}

// Nesting up to the limit parses, and brackets that are only text (in
// strings, heredocs and comments) do not count: the limit must never
// refuse a job file for what its strings say.
func TestParse_NestingAtLimitAndBracketsInText(t *testing.T) {
	// job, group, task, config and the attribute's own level leave the
	// rest of the limit to the expression.
	const blocks = 4
	expr := strings.Repeat("[", nesting.MaxDepth-blocks) + strings.Repeat("]", nesting.MaxDepth-blocks)
	_, err := jobspec.Parse("limit.nomad.hcl", []byte(jobWithConfig(expr)))
	must.NoError(t, err)

	over := strings.Repeat("[", nesting.MaxDepth-blocks+1) + strings.Repeat("]", nesting.MaxDepth-blocks+1)
	lines := parseErr(t, "limit.nomad.hcl", jobWithConfig(over))
	must.StrContains(t, lines[0], "nesting deeper than 64 levels")

	text := strings.Repeat("(", 1000)
	src := jobWithConfig(`"`+text+`"`) + "# " + text + "\n// " + text + "\n/* " + text + " */\n"
	src = strings.Replace(src, `driver = "mock_driver"`, "driver = \"mock_driver\"\n      env {\n        A = <<EOT\n"+text+"\nEOT\n      }", 1)
	job, err := jobspec.Parse("text.nomad.hcl", []byte(src))
	must.NoError(t, err)
	must.Eq[any](t, text, job.TaskGroups[0].Tasks[0].Config["x"])
	must.Eq(t, text+"\n", job.TaskGroups[0].Tasks[0].Env["A"])
}
