package allocrunner

import (
	"os"
	"path/filepath"
	"testing"
	"testing/synctest"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/client/clienttest"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// A dispatched job's payload is in the task's local/ directory, at the
// dispatch_payload file, before the task starts: a batch task reads its
// input from there.
func TestAllocRunner_WritesDispatchPayload(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		a := clienttest.MockAlloc("node-1", map[string]any{"run_for": "1s"})
		a.Job.Type = structs.JobTypeBatch
		a.Job.Dispatched = true
		a.Job.Payload = []byte(`{"site":"berlin"}`)
		task := a.Job.TaskGroups[0].Tasks[0]
		task.DispatchPayload = &structs.DispatchPayloadConfig{File: "in/input.json"}
		ar := h.runner(t, a)
		go ar.Run()
		defer ar.Destroy()

		h.rec.waitStatus(t, a.ID, structs.AllocClientStatusComplete)
		got, err := os.ReadFile(filepath.Join(h.root, a.ID, task.Name, "local", "in", "input.json"))
		must.NoError(t, err)
		must.Eq(t, `{"site":"berlin"}`, string(got))
	})
}

// A payload file that would land outside local/, by ".." or through a
// symlink in local/, is refused: a job must not write anywhere on the node.
func TestWriteDispatchPayload_StaysInLocalDir(t *testing.T) {
	local := filepath.Join(t.TempDir(), "local")
	outside := t.TempDir()
	must.NoError(t, os.MkdirAll(local, 0o755))
	must.NoError(t, os.Symlink(outside, filepath.Join(local, "link")))
	job := &structs.Job{Payload: []byte("x")}

	for _, file := range []string{"../escape", "link/escape", "/etc/escape"} {
		task := &structs.Task{DispatchPayload: &structs.DispatchPayloadConfig{File: file}}
		must.Error(t, writeDispatchPayload(local, job, task), must.Sprint(file))
	}
	entries, err := os.ReadDir(outside)
	must.NoError(t, err)
	must.SliceEmpty(t, entries)

	task := &structs.Task{DispatchPayload: &structs.DispatchPayloadConfig{File: "ok.txt"}}
	must.NoError(t, writeDispatchPayload(local, job, task))
	must.NoError(t, writeDispatchPayload(local, &structs.Job{}, task), must.Sprint("no payload, nothing to write"))
}
