package partition

import (
	"fmt"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/drivers/docker/dockertest"
	"github.com/nomad-edge/nomad/e2e/internal/harness"
)

// dockerTask is a docker task that runs until stopped, from the image the
// test's Podman service holds.
const dockerTask = `
    task "app" {
      driver = "docker"
      config {
        image   = "` + dockertest.Image + `"
        command = "/bin/sleep"
        args    = ["3600"]
      }
      resources {
        cpu    = 100
        memory = 32
      }
    }`

// A docker task of a group with a disconnect window runs on through a real
// partition: after the heal the same allocation is running, its task never
// restarted, and it is the same container.
func TestPartition_DockerTaskResumes(t *testing.T) {
	p, err := dockertest.Start()
	if err != nil {
		t.Skipf("the docker partition test needs a Podman service: %v", err)
	}
	t.Cleanup(p.Stop) // after the agents have stopped
	// The socket is a path: the client must see the host's mounts.
	e := startEdgeWith(t, edgeOptions{task: dockerTask, netOnly: true, fault: harness.LinkDown, clientConfig: fmt.Sprintf(`
plugin "docker" {
  config {
    endpoint = %q
  }
}
`, p.Endpoint)})
	before, err := p.Running()
	must.NoError(t, err)
	must.SliceLen(t, 1, before, must.Sprint("the docker task is one container"))

	got := e.cutAndHeal(t, harness.LinkDown, 12*time.Second)
	t.Logf("heal → node ready %v, → allocation running %v", got.ready, got.running)

	final := e.allocs()
	must.SliceLen(t, 1, final)
	must.Eq(t, e.alloc.ID, final[0].ID)
	must.Eq(t, uint64(0), final[0].TaskStates["app"].Restarts, must.Sprint("the task was not restarted"))
	must.Eq(t, e.alloc.TaskStates["app"].StartedAt, final[0].TaskStates["app"].StartedAt)
	after, err := p.Running()
	must.NoError(t, err)
	must.Eq(t, before, after, must.Sprint("the same container"))
}
