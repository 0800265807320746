package allocrunner

import (
	"testing"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/client/clienttest"
)

// NOMAD_MEMORY_MAX_LIMIT tells a task the limit it is held to, which is the
// allocated one: with memory oversubscription off the scheduler allocates
// no memory_max, and the task must not be told of a limit no driver sets.
func TestBuildEnv_MemoryMaxFollowsAllocation(t *testing.T) {
	for _, tc := range []struct {
		name      string
		allocated int64
		want      string
	}{
		{name: "granted", allocated: 1024, want: "1024"},
		{name: "ignored by the scheduler", allocated: 0, want: ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := clienttest.MockAlloc("node-1", nil)
			task := a.Job.TaskGroups[0].Tasks[0]
			task.Resources.MemoryMaxMB = 2048 // the job's ask, not what was given
			a.AllocatedResources.Tasks[task.Name].Memory.MemoryMaxMB = tc.allocated
			ad := NewAllocDir("/var/nomad/alloc", a.ID)
			env := buildEnv(envInput{alloc: a, task: task, allocDir: ad, taskDir: ad.TaskDir(task.Name)})
			must.Eq(t, tc.want, env["NOMAD_MEMORY_MAX_LIMIT"])
			must.Eq(t, int(tc.allocated), taskResources(a, task).MemoryMaxMB)
		})
	}
}
