package upstream

import (
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	nomadapi "github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/client/upstreamstate"
	"github.com/nomad-edge/nomad/drivers/docker/dockertest"
	"github.com/nomad-edge/nomad/e2e/internal/harness"
	"github.com/nomad-edge/nomad/testutil/wait"
)

// dockerPlugin points the docker driver, upstream's and ours alike, at the
// test's Podman service.
func dockerPlugin(endpoint string) string {
	return fmt.Sprintf("plugin \"docker\" {\n  config {\n    endpoint = %q\n  }\n}\n", endpoint)
}

// dockerJob is a docker job of one task that says "started" and sleeps in
// the test image. Its ulimit is upstream's task key (our driver has none):
// upstream sends it as the container's Ulimits, which replace Podman's
// default_ulimits whole, so both nofile and nproc are set; with nofile
// alone runc fails "error setting rlimit type 6" (RLIMIT_NPROC) on this
// kind of host.
func dockerJob(id string) *nomadapi.Job {
	job := sleepJob(id)
	task := job.TaskGroups[0].Tasks[0]
	task.Driver = "docker"
	task.Config = map[string]any{
		"image":   dockertest.Image,
		"command": "/bin/sh",
		"args":    []string{"-c", "echo started; exec sleep 3600"},
		"ulimit":  []map[string]string{{"nofile": "1024:1024", "nproc": "1024:1024"}},
	}
	return job
}

// TestOurClientAdoptsAnUpstreamDockerContainer is the docker half of
// taking over an upstream node: upstream 1.6.5's own docker driver runs a
// container on the node, the upstream agent is stopped, and our client,
// started on its data_dir, adopts that container (the same ID, not
// restarted) and retires upstream's docker_logger and logmon; stopping the
// job then stops the container through our client. The container is found
// by what upstream names and labels it, checked here against the real
// driver.
func TestOurClientAdoptsAnUpstreamDockerContainer(t *testing.T) {
	p, err := dockertest.Start()
	if err != nil {
		t.Skipf("the upstream docker takeover test needs a Podman service: %v", err)
	}
	t.Cleanup(p.Stop) // after the agents have stopped
	c := startUpstreamCluster(t, "", dockerPlugin(p.Endpoint))
	nodeID := c.waitNode("ready").ID
	api := c.server.API()
	_, _, err = api.Jobs().Register(dockerJob("box"), nil)
	must.NoError(t, err)
	alloc := c.waitAlloc("box", "running")

	var ctr *dockertest.Container
	wait.Poll(t, 30*time.Second, "upstream's container running", func() (bool, string) {
		ids, err := p.Running()
		if err != nil || len(ids) != 1 {
			return false, fmt.Sprintf("running %v: %v", ids, err)
		}
		ctr, err = p.Inspect(ids[0])
		return err == nil, fmt.Sprint(err)
	})
	t.Logf("upstream's container: name %q labels %v started %s", ctr.Name, ctr.Labels, ctr.State.StartedAt)
	must.Eq(t, "/sleep-"+alloc.ID, ctr.Name)
	must.Eq(t, alloc.ID, ctr.Labels["com.hashicorp.nomad.alloc_id"])

	dataDir := c.client.DataDir
	allocDir := filepath.Join(dataDir, "alloc")
	c.client.Stop()
	node, err := upstreamstate.Read(dataDir, upstreamstate.Options{})
	must.NoError(t, err)
	must.Eq(t, nodeID, node.NodeID)
	must.Len(t, 1, node.Allocs)
	must.Len(t, 1, node.Allocs[0].Tasks)
	must.Eq(t, "docker", node.Allocs[0].Tasks[0].Driver)
	helpers := upstreamstate.Helpers(allocDir, alloc.ID, node.Allocs[0].Tasks[0])
	kinds := map[upstreamstate.HelperKind]int{}
	for _, h := range helpers {
		kinds[h.Kind]++
	}
	must.Eq(t, map[upstreamstate.HelperKind]int{upstreamstate.Logmon: 1, upstreamstate.DockerLogger: 1}, kinds,
		must.Sprintf("a logmon and a docker_logger outlive the upstream agent: %v", helpers))
	still, err := p.Inspect(ctr.ID)
	must.NoError(t, err)
	must.True(t, still.State.Running, must.Sprint("the container outlives the upstream agent"))

	cp := harness.FreePorts(t)
	ours := c.agents.Add(harness.AgentConfig{
		Name:   "our-client",
		Ports:  cp,
		Config: ourClientConfig("upstream-1", dataDir, cp, []string{strconv.Quote(c.server.RPCAddr())}) + dockerPlugin(p.Endpoint),
	})
	start := time.Now()
	ours.Start()
	wait.Poll(t, 30*time.Second, "the node ready, run by our client", func() (bool, string) {
		n, _, err := api.Nodes().Info(nodeID, nil)
		if err != nil {
			return false, err.Error()
		}
		return n.Status == "ready" && n.Attributes["nomad.upstream"] != "true",
			fmt.Sprintf("status %s version %s", n.Status, n.Attributes["nomad.version"])
	})
	wait.Poll(t, 30*time.Second, "the container re-attached, not restarted", func() (bool, string) {
		ts, msgs, err := taskEvents(api, alloc.ID, "sleep")
		if err != nil {
			return false, err.Error()
		}
		ok := ts.State == "running" && ts.Restarts == 0 &&
			strings.Contains(strings.Join(msgs, "\n"), "Re-attached to the task an earlier client left running (taken over from an upstream Nomad client)")
		return ok, fmt.Sprintf("state %s restarts %d events %q", ts.State, ts.Restarts, msgs)
	})
	t.Logf("our client started → task re-attached: %v", time.Since(start).Round(time.Millisecond))
	ids, err := p.Running()
	must.NoError(t, err)
	must.Eq(t, []string{ctr.ID}, ids, must.Sprint("the same container, and no second one"))
	now, err := p.Inspect(ctr.ID)
	must.NoError(t, err)
	must.Eq(t, ctr.State.StartedAt, now.State.StartedAt, must.Sprint("the container was not restarted"))
	wait.Poll(t, 20*time.Second, "upstream's docker_logger and logmon gone", func() (bool, string) {
		var left []string
		for _, h := range helpers {
			if st := procState(h.PID); st != "" {
				left = append(left, fmt.Sprintf("%s %d %q", h.Kind, h.PID, st))
			}
		}
		return len(left) == 0, fmt.Sprint(left)
	})

	_, _, err = api.Jobs().Deregister("box", false, nil)
	must.NoError(t, err)
	took := wait.Poll(t, 30*time.Second, "the container stopped by our client", func() (bool, string) {
		got, err := p.Inspect(ctr.ID)
		if errors.Is(err, dockertest.ErrNoSuchContainer) {
			return true, ""
		}
		if err != nil {
			return false, err.Error()
		}
		return !got.State.Running, fmt.Sprintf("running %v", got.State.Running)
	})
	t.Logf("job stopped → container stopped: %v", took.Round(time.Millisecond))
	c.waitAlloc("box", "complete")
}
