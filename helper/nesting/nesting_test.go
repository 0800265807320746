package nesting_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/shoenig/test/must"
	"pgregory.net/rapid"

	"github.com/nomad-edge/nomad/helper/nesting"
)

// A JSON body nested deeper than the limit is refused at the byte that
// crossed it; brackets inside strings (escaped quotes included) are text.
func TestCheckJSON(t *testing.T) {
	at := strings.Repeat("[", 64) + strings.Repeat("]", 64)
	must.NoError(t, nesting.CheckJSON([]byte(at), 64))

	err := nesting.CheckJSON([]byte(`{"a":`+strings.Repeat("[", 64)), 64)
	var de *nesting.DepthError
	must.True(t, errors.As(err, &de))
	must.Eq(t, 68, de.Offset)
	must.EqError(t, err, "nesting deeper than 64 levels at byte 68")

	text := `{"a": "` + strings.Repeat(`[{\"`, 1000) + `"}`
	must.NoError(t, nesting.CheckJSON([]byte(text), 64))
}

// opener is one way to open levels of HCL nesting (a template and its
// interpolation are two), with what closes them.
type opener struct {
	open, close string
	levels      int
}

var openers = []opener{
	{"(", ")", 1}, {"[", "]", 1}, {"{a = ", "}", 1}, {`"${`, `}"`, 2}, {"<<EOT\n${", "}\nEOT\n", 2},
	{"!", "", 1}, {"- ", "", 1}, {"true ? 1 : ", "", 1}, {"f(1, ", ")", 1},
	{`"%{ if true }${`, `}%{ endif }"`, 3}, {"[for x in y: ", "]", 1},
}

// For any nesting of HCL's constructs, CheckHCL refuses exactly the
// expressions deeper than the limit, and what it accepts HCL parses: the
// limit never turns away a valid file for nesting it does not have.
func TestCheckHCL_CountsWhatTheParserRecursesOn(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		levels := rapid.SliceOfN(rapid.SampledFrom(openers), 0, 20).Draw(t, "levels")
		var open, closing strings.Builder
		depth := 0
		for i, o := range levels {
			open.WriteString(o.open)
			closing.WriteString(levels[len(levels)-1-i].close)
			depth += o.levels
		}
		src := "x = " + open.String() + "1" + closing.String() + "\n# (((( \"${\n"
		max := rapid.IntRange(0, 60).Draw(t, "max")

		d := nesting.CheckHCL([]byte(src), "f.hcl", max)
		if depth > max {
			must.NotNil(t, d, must.Sprintf("%q has %d levels", src, depth))
			must.Eq(t, "f.hcl", d.Subject.Filename)
			return
		}
		must.Nil(t, d, must.Sprintf("%q has %d levels", src, depth))
		_, diags := hclsyntax.ParseConfig([]byte(src), "f.hcl", hcl.InitialPos)
		must.False(t, diags.HasErrors(), must.Sprintf("%q: %v", src, diags))
	})
}

// The error points at the line and column where the limit was crossed.
func TestCheckHCL_Position(t *testing.T) {
	src := "a = 1\nb = \"é\" == (((\n"
	d := nesting.CheckHCL([]byte(src), "f.hcl", 2)
	must.NotNil(t, d)
	must.Eq(t, "nesting deeper than 2 levels", d.Summary)
	must.Eq(t, hcl.Pos{Line: 2, Column: 14, Byte: 20}, d.Subject.Start)
}
