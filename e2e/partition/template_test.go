package partition

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/e2e/internal/harness"
	"github.com/nomad-edge/nomad/testutil/wait"
)

// templateJob renders the job's own variable into local/v; the group's
// disconnect window lets the client restart the task while cut off.
const templateJob = `
job "edge" {
  datacenters = ["dc1"]
  constraint {
    attribute = "${node.unique.name}"
    value     = "edge-ns"
  }
  group "app" {
    max_client_disconnect = "1h"
    task "app" {
      driver = "mock_driver"
      config {
        run_for = "1h"
      }
      template {
        data        = "{{ with nomadVar \"nomad/jobs/edge\" }}v={{ .v }}{{ end }}"
        destination = "local/v"
        change_mode = "noop"
      }
      resources {
        cpu    = 100
        memory = 64
      }
    }
  }
}
`

// Templates across a real cut (issue 21, concepts/disconnected-clients.md
// "Templates and identities while cut off"): a template rendered from a
// variable keeps its content while the client's link is down, though the
// variable changes on the servers meanwhile; a client agent killed and
// started again while still cut off, its rendered file gone, renders it
// again from the data it kept (sealed in its state database); and once
// the link is back the changed variable reaches the file.
func TestPartition_TemplateAcrossCutAndRestart(t *testing.T) {
	e := newEdge(t, edgeOptions{fault: harness.LinkDown})
	out, code := e.server.Nomad("var", "put", "nomad/jobs/edge", "v=1")
	must.Eq(t, 0, code, must.Sprint(out))
	e.runJob(templateJob)
	var allocID string
	wait.Poll(t, 30*time.Second, "allocation running on the edge node", func() (bool, string) {
		list := e.allocs()
		if len(list) == 1 && list[0].ClientStatus == "running" && list[0].NodeID == e.nodeID {
			allocID = list[0].ID
			return true, ""
		}
		return false, fmt.Sprintf("%+v", list)
	})
	rendered := filepath.Join(e.client.DataDir, "alloc", allocID, "app", "local", "v")
	content := func() string {
		b, err := os.ReadFile(rendered)
		if err != nil {
			return err.Error()
		}
		return string(b)
	}
	wait.Poll(t, 30*time.Second, "the template rendered", func() (bool, string) {
		return content() == "v=1", content()
	})

	heal := e.fab.Apply("client", harness.LinkDown)
	out, code = e.server.Nomad("var", "put", "-force", "nomad/jobs/edge", "v=2")
	must.Eq(t, 0, code, must.Sprint(out))
	harness.Hold(t, 5*time.Second, "the file keeps its content while cut off", func() error {
		if got := content(); got != "v=1" {
			return fmt.Errorf("rendered %q", got)
		}
		return nil
	})

	// The offline reboot: the agent dies, the file is lost, and the agent
	// starts again with no server reachable.
	e.client.Kill9()
	must.NoError(t, os.Remove(rendered))
	e.client.Start()
	wait.Poll(t, 60*time.Second, "the template rendered again from the kept data, still cut off", func() (bool, string) {
		return content() == "v=1", content()
	})
	harness.Hold(t, 3*time.Second, "and kept", func() error {
		if got := content(); got != "v=1" {
			return fmt.Errorf("rendered %q", got)
		}
		return nil
	})

	heal()
	healedAt := time.Now()
	wait.Poll(t, 90*time.Second, "the changed variable reaching the file after the heal", func() (bool, string) {
		return content() == "v=2", content()
	})
	t.Logf("changed variable rendered %v after the heal", time.Since(healedAt))
	e.client.MustNotHaveDied()
}
