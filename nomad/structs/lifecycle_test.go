package structs_test

import (
	"testing"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/nomad/mock"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// Lifecycle validation: the hooks upstream knows pass, a missing or unknown
// hook is refused in upstream's words naming the task, and a group whose
// every task has a hook (no main task) is refused naming the group.
func TestJob_Validate_Lifecycle(t *testing.T) {
	const g = "Task group web validation failed: "
	withInit := func(l *structs.TaskLifecycleConfig) func(j *structs.Job) {
		return func(j *structs.Job) {
			init := j.TaskGroups[0].Tasks[0].Copy()
			init.Name = "init"
			init.Lifecycle = l
			j.TaskGroups[0].Tasks = append(j.TaskGroups[0].Tasks, init)
		}
	}
	const ti = g + "Task init validation failed: "
	cases := []struct {
		name   string
		mutate func(j *structs.Job)
		want   []string
	}{
		{"prestart", withInit(&structs.TaskLifecycleConfig{Hook: structs.TaskLifecycleHookPrestart}), nil},
		{"prestart sidecar", withInit(&structs.TaskLifecycleConfig{Hook: structs.TaskLifecycleHookPrestart, Sidecar: true}), nil},
		{"poststart", withInit(&structs.TaskLifecycleConfig{Hook: structs.TaskLifecycleHookPoststart}), nil},
		{"poststop", withInit(&structs.TaskLifecycleConfig{Hook: structs.TaskLifecycleHookPoststop}), nil},
		{"invalid hook", withInit(&structs.TaskLifecycleConfig{Hook: "prestrt"}),
			[]string{ti + "Lifecycle validation failed: invalid hook: prestrt"}},
		{"no hook", withInit(&structs.TaskLifecycleConfig{Sidecar: true}),
			[]string{ti + "Lifecycle validation failed: no lifecycle hook provided"}},
		{"no main task", func(j *structs.Job) {
			j.TaskGroups[0].Tasks[0].Lifecycle = &structs.TaskLifecycleConfig{Hook: structs.TaskLifecycleHookPrestart}
		}, []string{g + "Task group must have at least one main task (a task without a lifecycle block)"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			job := mock.Job()
			tc.mutate(job)
			must.Eq(t, tc.want, validationProblems(t, job))
		})
	}
}

// The lifecycle predicates the client's ordering rests on: no block (or an
// empty hook) is a main task; sidecar only counts on a lifecycle task.
func TestTask_LifecyclePredicates(t *testing.T) {
	main := &structs.Task{}
	must.True(t, main.IsMain())
	must.False(t, main.IsSidecar())
	pre := &structs.Task{Lifecycle: &structs.TaskLifecycleConfig{Hook: structs.TaskLifecycleHookPrestart, Sidecar: true}}
	must.True(t, pre.IsPrestart())
	must.True(t, pre.IsSidecar())
	must.False(t, pre.IsMain())
	stop := &structs.Task{Lifecycle: &structs.TaskLifecycleConfig{Hook: structs.TaskLifecycleHookPoststop}}
	must.True(t, stop.IsPoststop())
	must.False(t, stop.IsSidecar())
	c := pre.Copy()
	c.Lifecycle.Sidecar = false
	must.True(t, pre.Lifecycle.Sidecar, must.Sprint("Copy must not share the lifecycle block"))
}
