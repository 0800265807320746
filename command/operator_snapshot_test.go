package command

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/hashicorp/cli"
	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/command/agent"
	"github.com/nomad-edge/nomad/command/agent/agenttest"
	"github.com/nomad-edge/nomad/testutil/wait"
)

func snapshotSave(m Meta) cli.Command    { return &OperatorSnapshotSaveCommand{Meta: m} }
func snapshotRestore(m Meta) cli.Command { return &OperatorSnapshotRestoreCommand{Meta: m} }
func snapshotInspect(m Meta) cli.Command { return &OperatorSnapshotInspectCommand{Meta: m} }

// save writes a file inspect describes in upstream's layout; restore
// rewinds the cluster to it (a job registered after the save is gone); a
// truncated file is refused with what is wrong, and nothing of it is
// applied; an upstream file is described (what it carries and what not)
// and restores. This is the operator's backup and recovery.
func TestOperatorSnapshot_SaveInspectRestore(t *testing.T) {
	a := agenttest.NewDevAgent(t, nil)
	dir := t.TempDir()
	path := filepath.Join(dir, "backup.snap")

	code, out, errOut := run(t, a, snapshotSave, path)
	must.Eq(t, 0, code, must.Sprint(errOut))
	must.Eq(t, "State file written to "+path+"\n", out)
	_, err := os.Stat(path + ".tmp")
	must.True(t, os.IsNotExist(err), must.Sprint("the temporary file is renamed away"))

	code, out, errOut = runLocal(t, snapshotInspect, path)
	must.Eq(t, 0, code, must.Sprint(errOut))
	must.RegexMatch(t, regexp.MustCompile(`^ID       \d+-\d+-\d+\nSize     \d+\nIndex    \d+\nTerm     \d+\nVersion  1\n$`), out)
	code, out, _ = runLocal(t, snapshotInspect, "-json", path)
	must.Eq(t, 0, code)
	must.StrContains(t, out, `"Version": 1`)

	code, _, errOut = run(t, a, jobRun, "-detach", writeJob(t, "after-save", "mock_driver", "        run_for = \"1h\"\n"))
	must.Eq(t, 0, code, must.Sprint(errOut))
	hasJob := func() bool {
		j, err := a.Server().State().JobByID(nil, "default", "after-save")
		must.NoError(t, err)
		return j != nil
	}
	must.True(t, hasJob())

	// Refused whole: the job registered after the save stays.
	full, err := os.ReadFile(path)
	must.NoError(t, err)
	truncated := filepath.Join(dir, "truncated.snap")
	must.NoError(t, os.WriteFile(truncated, full[:len(full)/2], 0o600))
	code, _, errOut = run(t, a, snapshotRestore, truncated)
	must.Eq(t, 1, code)
	must.StrContains(t, errOut, "snapshot file is corrupt or truncated")
	code, _, errOut = runLocal(t, snapshotInspect, truncated)
	must.Eq(t, 1, code)
	must.StrContains(t, errOut, "Error verifying snapshot: snapshot file is corrupt or truncated")

	upstream := "../helper/snapshot/testdata/upstream-1.6.5.snap"
	code, out, errOut = runLocal(t, snapshotInspect, upstream)
	must.Eq(t, 0, code, must.Sprint(errOut))
	must.StrContains(t, out, "Index        10\n")
	must.StrContains(t, out, "Format       upstream Nomad\n")
	must.StrContains(t, out, "Carried      Node 1")
	must.StrContains(t, out, "Not carried  ")
	// An upstream file replaces the state as ours does: the job
	// registered after our save is gone with it.
	code, out, errOut = run(t, a, snapshotRestore, upstream)
	must.Eq(t, 0, code, must.Sprint(errOut))
	must.Eq(t, "Snapshot Restored\n", out)
	must.False(t, hasJob())

	code, out, errOut = run(t, a, snapshotRestore, path)
	must.Eq(t, 0, code, must.Sprint(errOut))
	must.Eq(t, "Snapshot Restored\n", out)
	must.False(t, hasJob())

	// The restored cluster schedules: a job run now is placed.
	code, _, errOut = run(t, a, jobRun, "-detach", writeJob(t, "after-restore", "mock_driver", "        run_for = \"1h\"\n"))
	must.Eq(t, 0, code, must.Sprint(errOut))
	wait.Poll(t, 20e9, "the job registered after the restore runs", func() (bool, string) {
		allocs, err := a.Server().State().AllocsByJob(nil, "default", "after-restore", false)
		must.NoError(t, err)
		for _, al := range allocs {
			if al.ClientStatus == "running" {
				return true, ""
			}
		}
		return false, "no running allocation yet"
	})
}

// With ACLs on, save and restore need a management token, as upstream's.
func TestOperatorSnapshot_NeedsManagementToken(t *testing.T) {
	a := agenttest.NewDevAgent(t, func(c *agent.Config) { c.ACL = &agent.ACLConfig{Enabled: true} })
	bootstrap := aclCmd(func(m Meta) *ACLBootstrapCommand { return &ACLBootstrapCommand{Meta: m} })
	code, out, errOut := run(t, a, bootstrap)
	must.Eq(t, 0, code, must.Sprint(errOut))
	secret := secretRE.FindStringSubmatch(out)[1]

	path := filepath.Join(t.TempDir(), "backup.snap")
	code, _, errOut = run(t, a, snapshotSave, path)
	must.Eq(t, 1, code)
	must.StrContains(t, errOut, "403")
	code, _, errOut = run(t, a, snapshotSave, "-token", secret, path)
	must.Eq(t, 0, code, must.Sprint(errOut))
	code, _, errOut = run(t, a, snapshotRestore, path)
	must.Eq(t, 1, code)
	must.StrContains(t, errOut, "403")
	code, _, errOut = run(t, a, snapshotRestore, "-token", secret, path)
	must.Eq(t, 0, code, must.Sprint(errOut))
}
