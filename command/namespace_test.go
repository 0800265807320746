package command

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/hashicorp/cli"
	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/api"
	"github.com/nomad-edge/nomad/command/agent/agenttest"
)

func nsApply(m Meta) cli.Command   { return &NamespaceApplyCommand{Meta: m} }
func nsList(m Meta) cli.Command    { return &NamespaceListCommand{Meta: m} }
func nsStatus(m Meta) cli.Command  { return &NamespaceStatusCommand{Meta: m} }
func nsInspect(m Meta) cli.Command { return &NamespaceInspectCommand{Meta: m} }
func nsDelete(m Meta) cli.Command  { return &NamespaceDeleteCommand{Meta: m} }

func writeFile(t *testing.T, name, src string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	must.NoError(t, os.WriteFile(p, []byte(src), 0o600))
	return p
}

// An operator's path through `nomad namespace`: apply by name with
// -description, apply from HCL and JSON files in both layouts, list,
// status, inspect, and delete; the default namespace stays.
func TestNamespace_CLI(t *testing.T) {
	a := agenttest.NewDevAgent(t, nil)

	code, out, stderr := run(t, a, nsApply, "-description", "edge fleet", "fleet")
	must.Eq(t, 0, code, must.Sprint(stderr))
	must.StrContains(t, out, `Successfully applied namespace "fleet"!`)

	block := writeFile(t, "lab.hcl", "namespace \"lab\" {\n  description = \"test rigs\"\n  meta {\n    owner = \"qa\"\n  }\n}\n")
	code, _, stderr = run(t, a, nsApply, block)
	must.Eq(t, 0, code, must.Sprint(stderr))
	flat := writeFile(t, "ops.json", `{"name": "ops", "description": "operators", "meta": {"pager": "on"}}`)
	code, _, stderr = run(t, a, nsApply, "-json", flat)
	must.Eq(t, 0, code, must.Sprint(stderr))

	code, out, stderr = run(t, a, nsList)
	must.Eq(t, 0, code, must.Sprint(stderr))
	lines := splitLines(out)
	must.Eq(t, []string{"Name", "Description"}, columns(lines[0]))
	must.Eq(t, []string{"default", "Default shared namespace"}, columns(lines[1]))
	must.Eq(t, []string{"fleet", "edge fleet"}, columns(lines[2]))
	must.Len(t, 5, lines)

	code, out, stderr = run(t, a, nsStatus, "lab")
	must.Eq(t, 0, code, must.Sprint(stderr))
	must.StrContains(t, out, "Description = test rigs")
	must.StrContains(t, out, "Metadata")
	must.StrContains(t, out, "owner = qa")

	// Applying by name again keeps what no flag sets.
	code, _, stderr = run(t, a, nsApply, "lab")
	must.Eq(t, 0, code, must.Sprint(stderr))
	code, out, stderr = run(t, a, nsInspect, "lab")
	must.Eq(t, 0, code, must.Sprint(stderr))
	var got api.Namespace
	must.NoError(t, json.Unmarshal([]byte(out), &got))
	must.Eq(t, "test rigs", got.Description)
	must.Eq(t, "qa", got.Meta["owner"])

	code, out, stderr = run(t, a, nsDelete, "lab")
	must.Eq(t, 0, code, must.Sprint(stderr))
	must.StrContains(t, out, `Successfully deleted namespace "lab"!`)
	code, _, stderr = run(t, a, nsDelete, "default")
	must.Eq(t, 1, code)
	must.StrContains(t, stderr, "default namespace cannot be deleted")
	code, _, stderr = run(t, a, nsStatus, "lab")
	must.Eq(t, 1, code)
	must.StrContains(t, stderr, "404")
}

// A specification with a block we do not implement, or a value of the
// wrong type, is refused with its file:line:column before anything is
// sent.
func TestNamespace_CLI_BadSpec(t *testing.T) {
	a := agenttest.NewDevAgent(t, nil)
	caps := writeFile(t, "caps.hcl", "name = \"x\"\ncapabilities {\n  enabled_task_drivers = [\"raw_exec\"]\n}\n")
	code, _, stderr := run(t, a, nsApply, caps)
	must.Eq(t, 1, code)
	must.StrContains(t, stderr, "caps.hcl:2:1")
	must.StrContains(t, stderr, "capabilities")

	typ := writeFile(t, "typ.hcl", "namespace \"x\" {\n  description = 3\n}\n")
	code, _, stderr = run(t, a, nsApply, typ)
	must.Eq(t, 1, code)
	must.StrContains(t, stderr, "typ.hcl:2:17")
	must.StrContains(t, stderr, "description must be a string")

	code, _, stderr = run(t, a, nsApply, "bad name")
	must.Eq(t, 1, code)
	must.StrContains(t, stderr, `invalid namespace name "bad name"`)

	code, _, stderr = run(t, a, nsApply, "missing.hcl")
	must.Eq(t, 1, code)
	must.StrContains(t, stderr, "reading namespace specification")
}

// `nomad namespace` with a word that is no subcommand says so, as the
// other command groups do.
func TestNamespace_CLI_UnknownSubcommand(t *testing.T) {
	ui := cli.NewMockUi()
	c := &NamespaceCommand{Meta: Meta{Ui: ui}}
	must.Eq(t, 1, c.Run([]string{"lst"}))
	must.StrContains(t, ui.ErrorWriter.String(), `"lst" is not a subcommand of "nomad namespace"`)
	must.Eq(t, cli.RunResultHelp, c.Run(nil))
}
