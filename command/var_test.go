package command

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/cli"
	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/api"
	"github.com/nomad-edge/nomad/command/agent/agenttest"
)

func varPut(m Meta) cli.Command   { return &VarPutCommand{Meta: m} }
func varGet(m Meta) cli.Command   { return &VarGetCommand{Meta: m} }
func varList(m Meta) cli.Command  { return &VarListCommand{Meta: m} }
func varPurge(m Meta) cli.Command { return &VarPurgeCommand{Meta: m} }

// var put, get, list and purge print upstream's shapes: the table (metadata
// then Items), HCL a later put reads back (modify_index becomes the check
// index), JSON, a template, a raw item; put creates only unless told, and
// a lost check-and-set says which index to use.
func TestVarCommands_Output(t *testing.T) {
	a := agenttest.NewDevAgent(t, nil)

	code, out, errOut := run(t, a, varPut, "-out=table", "secret/creds", "user=me", "pass=s3cret")
	must.Eq(t, 0, code, must.Sprint(errOut))
	for _, want := range []string{"Namespace   = default", "Path        = secret/creds", "Check Index = ", "Items\npass = s3cret\nuser = me"} {
		must.StrContains(t, out, want)
	}

	code, _, errOut = run(t, a, varPut, "-out=none", "secret/creds", "user=you")
	must.Eq(t, 1, code)
	must.StrContains(t, errOut, "Check-and-Set conflict")
	must.StrContains(t, errOut, "-force or -check-index=")

	code, out, _ = run(t, a, varGet, "-out=json", "secret/creds")
	must.Eq(t, 0, code)
	var v api.Variable
	must.NoError(t, json.Unmarshal([]byte(out), &v))
	must.Eq(t, "s3cret", v.Items["pass"])

	code, out, _ = run(t, a, varGet, "-item=user", "secret/creds")
	must.Eq(t, 0, code)
	must.Eq(t, "me", out, must.Sprint("-item prints the value alone, no newline"))

	code, out, _ = run(t, a, varGet, "-out=go-template", "-template={{.Path}}:{{.Items.user}}", "secret/creds")
	must.Eq(t, 0, code)
	must.Eq(t, "secret/creds:me\n", out)

	// The HCL output is a specification: edited and put back, its
	// modify_index is the check index, so the update goes through.
	code, out, _ = run(t, a, varGet, "-out=hcl", "secret/creds")
	must.Eq(t, 0, code)
	must.StrContains(t, out, `path         = "secret/creds"`)
	spec := filepath.Join(t.TempDir(), "creds.nv.hcl")
	must.NoError(t, os.WriteFile(spec, []byte(strings.Replace(out, `"me"`, `"admin"`, 1)), 0o600))
	code, out, errOut = run(t, a, varPut, "-out=none", "@"+spec)
	must.Eq(t, 0, code, must.Sprint(errOut))
	must.StrContains(t, out, `Updated variable "secret/creds" with modify index`)

	code, _, errOut = run(t, a, varPut, "-force", "-out=none", "other/one", "k=v")
	must.Eq(t, 0, code, must.Sprint(errOut))

	code, out, _ = run(t, a, varList, "-out=table")
	must.Eq(t, 0, code)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	must.Len(t, 3, lines)
	must.StrHasPrefix(t, "Namespace  Path          Last Updated", lines[0])
	code, out, _ = run(t, a, varList, "-out=terse", "secret/")
	must.Eq(t, 0, code)
	must.Eq(t, "secret/creds\n", out)
	code, out, errOut = run(t, a, varList, "-out=table", "-per-page=1")
	must.Eq(t, 0, code)
	must.StrContains(t, errOut, "Next page token: default.secret/creds")
	must.StrContains(t, out, "other/one")

	code, _, errOut = run(t, a, varPurge, "-check-index=1", "other/one")
	must.Eq(t, 1, code)
	must.StrContains(t, errOut, "Check-and-Set conflict")
	code, out, _ = run(t, a, varPurge, "other/one")
	must.Eq(t, 0, code)
	must.Eq(t, "Successfully purged variable \"other/one\"!\n", out)
	code, _, errOut = run(t, a, varGet, "other/one")
	must.Eq(t, 1, code)
	must.StrContains(t, errOut, "Variable not found")
}

// A specification with a key var put does not know is refused naming
// the key and its position, rather than written without it.
func TestVarPut_UnknownSpecKey(t *testing.T) {
	a := agenttest.NewDevAgent(t, nil)
	spec := filepath.Join(t.TempDir(), "bad.nv.hcl")
	must.NoError(t, os.WriteFile(spec, []byte("path = \"a/b\"\nitemz { k = \"v\" }\n"), 0o600))
	code, _, errOut := run(t, a, varPut, "@"+spec)
	must.Eq(t, 1, code)
	must.StrContains(t, errOut, `bad.nv.hcl:2:1: unknown block "itemz"`)
}

// var init writes a specification var put accepts as it is.
func TestVarInit_RoundTrip(t *testing.T) {
	a := agenttest.NewDevAgent(t, nil)
	dir := t.TempDir()
	file := filepath.Join(dir, "spec.nv.hcl")
	code, out, _ := run(t, a, cmdOf(func(m Meta) *VarInitCommand { return &VarInitCommand{Meta: m} }), file)
	must.Eq(t, 0, code)
	must.StrContains(t, out, "Example variable specification written to "+file)
	code, _, errOut := run(t, a, varPut, "-out=none", "from/init", "@"+file)
	must.Eq(t, 0, code, must.Sprint(errOut))
	code, out, _ = run(t, a, varGet, "-item=key2", "from/init")
	must.Eq(t, 0, code)
	must.Eq(t, "value 2", out)
}

// var lock runs the command while holding the lock and releases it after;
// keyring list and rotate print upstream's Key/State/Create Time table.
func TestVarLockAndKeyringCommands(t *testing.T) {
	a := agenttest.NewDevAgent(t, nil)
	marker := filepath.Join(t.TempDir(), "ran")
	code, _, errOut := run(t, a, cmdOf(func(m Meta) *VarLockCommand { return &VarLockCommand{Meta: m} }),
		"-ttl=5s", "locks/job", "touch "+marker)
	must.Eq(t, 0, code, must.Sprint(errOut))
	_, err := os.Stat(marker)
	must.NoError(t, err)
	code, out, _ := run(t, a, varGet, "-out=json", "locks/job")
	must.Eq(t, 0, code)
	must.StrNotContains(t, out, `"Lock"`, must.Sprint("released after the command"))

	keyring := cmdOf(func(m Meta) *OperatorRootKeyringListCommand { return &OperatorRootKeyringListCommand{Meta: m} })
	code, out, _ = run(t, a, keyring)
	must.Eq(t, 0, code)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	must.Len(t, 2, lines)
	must.StrHasPrefix(t, "Key       State   Create Time", lines[0])
	must.StrContains(t, lines[1], "active")
	code, _, _ = run(t, a, cmdOf(func(m Meta) *OperatorRootKeyringRotateCommand { return &OperatorRootKeyringRotateCommand{Meta: m} }))
	must.Eq(t, 0, code)
	code, out, _ = run(t, a, keyring, "-verbose")
	must.Eq(t, 0, code)
	must.StrContains(t, out, "inactive")
	must.Eq(t, 3, len(strings.Split(strings.TrimSpace(out), "\n")))

	var active, inactive string
	for _, l := range strings.Split(strings.TrimSpace(out), "\n")[1:] {
		f := strings.Fields(l)
		if f[1] == "active" {
			active = f[0]
		} else {
			inactive = f[0]
		}
	}
	remove := cmdOf(func(m Meta) *OperatorRootKeyringRemoveCommand { return &OperatorRootKeyringRemoveCommand{Meta: m} })
	code, _, errOut = run(t, a, remove, active)
	must.Eq(t, 1, code)
	must.StrContains(t, errOut, "is the active root key and cannot be removed")
	code, out, errOut = run(t, a, remove, inactive)
	must.Eq(t, 0, code, must.Sprint(errOut))
	must.Eq(t, "Removed encryption key "+inactive+"\n", out)
	code, _, errOut = run(t, a, remove, inactive)
	must.Eq(t, 1, code)
	must.StrContains(t, errOut, "404")
	code, out, _ = run(t, a, keyring)
	must.Eq(t, 0, code)
	must.Eq(t, 2, len(strings.Split(strings.TrimSpace(out), "\n")))
}
