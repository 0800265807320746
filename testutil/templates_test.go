package testutil_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/client"
	"github.com/nomad-edge/nomad/nomad/structs"
	"github.com/nomad-edge/nomad/testutil"
	"github.com/nomad-edge/nomad/testutil/fault"
	"github.com/nomad-edge/nomad/testutil/wait"
)

func putVar(t *testing.T, c *testutil.MemCluster, path string, items map[string]string) {
	t.Helper()
	var resp structs.VariablesApplyResponse
	must.NoError(t, c.Leader().RPC("Variables.Apply", &structs.VariablesApplyRequest{
		Op: structs.VarOpSet, Var: &structs.VariableDecrypted{
			VariableMetadata: structs.VariableMetadata{Namespace: structs.DefaultNamespace, Path: path},
			Items:            structs.VariableItems(items),
		},
	}, &resp))
	must.Eq(t, structs.VarOpResultOk, resp.Result)
}

// TestMemCluster_TemplateFollowsVariable checks templates end to end: the
// client has the task's identity signed, renders its job's variable into
// the task's file before the start, and a change to the variable reaches
// the running task's file through a blocking query, restarting nothing
// (change_mode noop).
func TestMemCluster_TemplateFollowsVariable(t *testing.T) {
	testutil.Bubble(t, func(t *testing.T) {
		var allocRoot string
		c := testutil.NewMemCluster(t, testutil.MemClusterConfig{Servers: 1, Clients: 1,
			Client: func(_ int, cc *client.Config) { allocRoot = cc.AllocDir }})
		putVar(t, c, "nomad/jobs/edge-app", map[string]string{"greeting": "hello"})

		job := disconnectJob()
		job.TaskGroups[0].Tasks[0].Templates = []*structs.Template{{
			EmbeddedTmpl: `{{ with nomadVar "nomad/jobs/edge-app" }}{{ .greeting }}{{ end }}`,
			DestPath:     "local/greeting.txt", ChangeMode: structs.TemplateChangeModeNoop,
		}}
		job.Canonicalize()
		alloc, _ := runOne(t, c, job)
		file := filepath.Join(allocRoot, alloc.ID, "app", "local", "greeting.txt")
		read := func() string {
			b, _ := os.ReadFile(file)
			return string(b)
		}
		must.Eq(t, "hello", read())

		putVar(t, c, "nomad/jobs/edge-app", map[string]string{"greeting": "bonjour"})
		wait.Eventually(t, time.Minute, "the new content", func() (bool, string) {
			return read() == "bonjour", read()
		})
		a := clientAlloc(t, c, 0, alloc.ID)
		must.Eq(t, uint64(0), a.TaskStates["app"].Restarts)
	})
}

// TestMemCluster_TemplateAcrossPartition checks issue 21's edge promise
// through the cluster: while the client is cut off a variable change does
// not reach the task and the task is left running with its file as it
// was; after the heal the change arrives (change_mode restart restarts
// it once), and a heal with nothing changed restarts nothing.
func TestMemCluster_TemplateAcrossPartition(t *testing.T) {
	testutil.Bubble(t, func(t *testing.T) {
		var allocRoot string
		c := testutil.NewMemCluster(t, testutil.MemClusterConfig{Servers: 1, Clients: 1,
			Client: func(_ int, cc *client.Config) { allocRoot = cc.AllocDir }})
		putVar(t, c, "nomad/jobs/edge-app", map[string]string{"greeting": "hello"})
		job := disconnectJob()
		job.TaskGroups[0].Tasks[0].Templates = []*structs.Template{{
			EmbeddedTmpl: `{{ with nomadVar "nomad/jobs/edge-app" }}{{ .greeting }}{{ end }}`,
			DestPath:     "local/greeting.txt", ChangeMode: structs.TemplateChangeModeRestart,
		}}
		job.Canonicalize()
		alloc, _ := runOne(t, c, job)
		file := filepath.Join(allocRoot, alloc.ID, "app", "local", "greeting.txt")
		read := func() string {
			b, _ := os.ReadFile(file)
			return string(b)
		}
		restarts := func() uint64 { return clientAlloc(t, c, 0, alloc.ID).TaskStates["app"].Restarts }

		// A heal with nothing changed: no restart.
		c.Links[0].Cut(fault.Blackhole)
		testutil.Settle(2 * time.Minute)
		c.Links[0].Heal()
		testutil.Settle(2 * time.Minute)
		must.Eq(t, "hello", read())
		must.Eq(t, uint64(0), restarts())

		c.Links[0].Cut(fault.Blackhole)
		putVar(t, c, "nomad/jobs/edge-app", map[string]string{"greeting": "bonjour"})
		testutil.Settle(5 * time.Minute)
		must.Eq(t, "hello", read(), must.Sprint("nothing reaches a cut-off client"))
		must.Eq(t, uint64(0), restarts())

		c.Links[0].Heal()
		wait.Eventually(t, 5*time.Minute, "the change after the heal", func() (bool, string) {
			return read() == "bonjour" && restarts() == 1, read()
		})
	})
}
