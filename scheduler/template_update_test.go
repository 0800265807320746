package scheduler

import (
	"testing"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/nomad/mock"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// TestTasksUpdated_TemplatesAndIdentity checks that a changed template or
// identity block is a destructive update, as upstream: the client's task
// runner renders the templates and hands over the identity of the job
// version it started with, so an in-place update would never apply them.
func TestTasksUpdated_TemplatesAndIdentity(t *testing.T) {
	a := mock.Job()
	a.TaskGroups[0].Tasks[0].Templates = []*structs.Template{{EmbeddedTmpl: "v1", DestPath: "local/x"}}
	b := a.Copy()
	must.False(t, tasksUpdated(a, b, a.TaskGroups[0].Name))
	b.TaskGroups[0].Tasks[0].Templates[0].EmbeddedTmpl = "v2"
	must.True(t, tasksUpdated(a, b, a.TaskGroups[0].Name))

	c := a.Copy()
	c.TaskGroups[0].Tasks[0].Identity = &structs.WorkloadIdentity{Env: true}
	must.True(t, tasksUpdated(a, c, a.TaskGroups[0].Name))
}
