package command

import (
	"strings"
	"testing"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/api"
)

// alloc status names each task's lifecycle as upstream does, in the task's
// heading ("(prestart sidecar)") and the short view's Lifecycle column
// ("main" for a main task), and lists ephemeral lifecycle tasks, then
// sidecars, then main tasks.
func TestAllocStatus_Lifecycle(t *testing.T) {
	job := &api.Job{TaskGroups: []*api.TaskGroup{{Name: new("g"), Tasks: []*api.Task{
		{Name: "web"},
		{Name: "proxy", Lifecycle: &api.TaskLifecycle{Hook: api.TaskLifecycleHookPrestart, Sidecar: true}},
		{Name: "init", Lifecycle: &api.TaskLifecycle{Hook: api.TaskLifecycleHookPrestart}},
		{Name: "cleanup", Lifecycle: &api.TaskLifecycle{Hook: api.TaskLifecycleHookPoststop}},
	}}}}
	a := &api.Allocation{Job: job, TaskGroup: "g", TaskStates: map[string]*api.TaskState{
		"web":     {State: "running"},
		"proxy":   {State: "running"},
		"init":    {State: "dead"},
		"cleanup": {State: "pending"},
	}}
	must.Eq(t, []string{"cleanup", "init", "proxy", "web"}, sortedTaskNames(a))

	rows := strings.Split(strings.TrimSpace(formatTaskSummary(a)), "\n")
	must.Len(t, 5, rows)
	must.StrHasSuffix(t, "Lifecycle", strings.TrimSpace(rows[0]))
	for i, want := range []string{"poststop", "prestart", "prestart sidecar", "main"} {
		must.StrHasSuffix(t, want, strings.TrimSpace(rows[i+1]))
	}

	must.StrHasPrefix(t, `Task "proxy" (prestart sidecar) is "running"`, formatTask(a, "proxy"))
	must.StrHasPrefix(t, `Task "init" (prestart) is "dead"`, formatTask(a, "init"))
	must.StrHasPrefix(t, `Task "web" is "running"`, formatTask(a, "web"))
}
