package scheduler

import (
	"testing"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/nomad/mock"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// TestTasksUpdated_Artifacts checks a changed artifact is a destructive
// update, as upstream: the client fetches artifacts before a task's first
// start only, so an in-place update would keep running the old release.
func TestTasksUpdated_Artifacts(t *testing.T) {
	a := mock.Job()
	a.TaskGroups[0].Tasks[0].Artifacts = []*structs.TaskArtifact{{GetterSource: "https://x/app-1.0.tgz", GetterMode: "any", RelativeDest: "local/"}}
	b := a.Copy()
	must.False(t, tasksUpdated(a, b, a.TaskGroups[0].Name))
	b.TaskGroups[0].Tasks[0].Artifacts[0].GetterSource = "https://x/app-1.1.tgz"
	must.True(t, tasksUpdated(a, b, a.TaskGroups[0].Name))
}
