package agent

import (
	"testing"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/api"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// An empty lifecycle block from the API (the official client keeps one
// through Canonicalize) makes a main task; one that sets sidecar without a
// hook is carried over, for validation to refuse by name.
func TestConvertTask_Lifecycle(t *testing.T) {
	must.Nil(t, convertTask(&api.Task{Name: "t", Lifecycle: &api.TaskLifecycle{}}).Lifecycle)
	must.Eq(t, &structs.TaskLifecycleConfig{Sidecar: true},
		convertTask(&api.Task{Name: "t", Lifecycle: &api.TaskLifecycle{Sidecar: true}}).Lifecycle)
	must.Eq(t, &structs.TaskLifecycleConfig{Hook: "poststop"},
		convertTask(&api.Task{Name: "t", Lifecycle: &api.TaskLifecycle{Hook: "poststop"}}).Lifecycle)
}
