package agent_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	nomadapi "github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/command/agent"
	"github.com/nomad-edge/nomad/command/agent/agenttest"
	"github.com/nomad-edge/nomad/testutil/wait"
)

// A job submitted through the official client with a host volume and an
// exec task mounting it runs on the node that offers the volume, and the
// file the task writes lands in the host path: the whole chain from the
// wire shape through feasibility to the driver's bind mount.
func TestHostVolume_ExecJobWritesHostPath(t *testing.T) {
	host := t.TempDir()
	must.NoError(t, os.Chmod(host, 0o777)) // exec runs tasks as nobody
	a := agenttest.NewDevAgent(t, func(c *agent.Config) {
		c.Client.HostVolumes = []*agent.HostVolumeConfig{{Name: "data", Path: host}}
	})
	c, err := nomadapi.NewClient(&nomadapi.Config{Address: a.HTTPAddr})
	must.NoError(t, err)
	node, _, err := c.Nodes().Info(a.Client().NodeID(), nil)
	must.NoError(t, err)
	if d := node.Drivers["exec"]; d == nil || !d.Healthy {
		t.Skip("the exec driver is not usable here (needs root, namespaces and cgroups)")
	}

	task := nomadapi.NewTask("writer", "exec")
	task.SetConfig("command", "/bin/sh")
	task.SetConfig("args", []string{"-c", "echo from-the-job > /srv/data/out"})
	task.Require(&nomadapi.Resources{CPU: new(100), MemoryMB: new(64)})
	task.VolumeMounts = []*nomadapi.VolumeMount{{Volume: new("d"), Destination: new("/srv/data")}}
	group := nomadapi.NewTaskGroup("g", 1).AddTask(task)
	group.Volumes = map[string]*nomadapi.VolumeRequest{"d": {Name: "d", Type: "host", Source: "data"}}
	job := nomadapi.NewBatchJob("vol", "vol", "global", 50).AddTaskGroup(group)
	job.Datacenters = []string{"*"}
	_, _, err = c.Jobs().Register(job, nil)
	must.NoError(t, err)

	out := filepath.Join(host, "out")
	wait.Poll(t, 30*time.Second, "the task's file in the host volume", func() (bool, string) {
		b, err := os.ReadFile(out)
		if err != nil {
			allocs, _, _ := c.Jobs().Allocations("vol", true, nil)
			for _, al := range allocs {
				if ts := al.TaskStates["writer"]; ts != nil {
					seen := al.ClientStatus
					for _, e := range ts.Events {
						seen += "; " + e.Type + ": " + e.DisplayMessage
					}
					return false, seen
				}
			}
			return false, err.Error()
		}
		return string(b) == "from-the-job\n", string(b)
	})
}

// Validation through the official client: a mount of an undefined volume
// and a CSI volume are refused by name, as the job file's parser does.
func TestHostVolume_ValidationThroughAPI(t *testing.T) {
	a := agenttest.NewDevAgent(t, nil)
	c, err := nomadapi.NewClient(&nomadapi.Config{Address: a.HTTPAddr})
	must.NoError(t, err)
	task := nomadapi.NewTask("t", "mock_driver")
	task.VolumeMounts = []*nomadapi.VolumeMount{{Volume: new("nope"), Destination: new("/srv")}}
	group := nomadapi.NewTaskGroup("g", 1).AddTask(task)
	group.Volumes = map[string]*nomadapi.VolumeRequest{"c": {Name: "c", Type: "csi", Source: "ebs"}}
	job := nomadapi.NewServiceJob("v", "v", "global", 50).AddTaskGroup(group)
	_, _, err = c.Jobs().Register(job, nil)
	must.ErrorContains(t, err, "Volume Mount 1 references undefined volume nope")
	must.ErrorContains(t, err, `Volume c: type "csi" is not supported`)
}
