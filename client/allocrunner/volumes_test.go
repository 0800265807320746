package allocrunner

import (
	"testing"
	"testing/synctest"

	"github.com/hashicorp/go-hclog"
	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/client/clienttest"
	"github.com/nomad-edge/nomad/drivers"
	"github.com/nomad-edge/nomad/drivers/mock"
	"github.com/nomad-edge/nomad/helper/clock"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// volumeAlloc is a mock allocation whose group asks for the host volume
// "data" (read_only as given) and whose task mounts it at /srv/data.
func volumeAlloc(groupRO, mountRO bool) *structs.Allocation {
	a := clienttest.MockAlloc("node-1", map[string]any{"run_for": "0s"})
	a.Job.Type = structs.JobTypeBatch
	tg := a.Job.TaskGroups[0]
	tg.Volumes = map[string]*structs.VolumeRequest{"d": {Name: "d", Type: structs.VolumeTypeHost, Source: "data", ReadOnly: groupRO}}
	tg.Tasks[0].VolumeMounts = []*structs.VolumeMount{{Volume: "d", Destination: "/srv/data", ReadOnly: mountRO, PropagationMode: "private"}}
	return a
}

// A driver with filesystem isolation gets the task's mounts resolved to
// the node's host path, read-only when the node, the request or the
// mount says so.
func TestTaskConfig_VolumeMounts(t *testing.T) {
	m, err := mock.New(drivers.Options{}, nil)
	must.NoError(t, err)
	for _, tc := range []struct {
		name                     string
		nodeRO, groupRO, mountRO bool
		want                     bool
	}{
		{name: "writable"},
		{name: "node read-only", nodeRO: true, want: true},
		{name: "request read-only", groupRO: true, want: true},
		{name: "mount read-only", mountRO: true, want: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := volumeAlloc(tc.groupRO, tc.mountRO)
			node := NodeInfo{HostVolumes: map[string]*structs.ClientHostVolumeConfig{"data": {Name: "data", Path: "/srv/fleet", ReadOnly: tc.nodeRO}}}
			tr := newTaskRunner(taskRunnerConfig{logger: hclog.NewNullLogger(), clock: clock.Real(), node: node,
				alloc: a, task: a.Job.TaskGroups[0].Tasks[0], allocDir: NewAllocDir(t.TempDir(), a.ID), driver: chrootDriver{m}})
			must.NoError(t, tr.checkVolumeMounts())
			must.Eq(t, []*drivers.MountConfig{{TaskPath: "/srv/data", HostPath: "/srv/fleet", Readonly: tc.want, PropagationMode: "private"}},
				tr.taskConfig().Mounts)
		})
	}
}

// A task that mounts a volume fails, without restarts, when the node has
// no such host volume, or when its driver has no filesystem isolation
// (raw_exec, mock_driver): upstream refuses the latter in the same words.
func TestAllocRunner_VolumeMountRefused(t *testing.T) {
	for _, tc := range []struct {
		name string
		vols map[string]*structs.ClientHostVolumeConfig
		want string
	}{
		{name: "no such volume", want: "volumes: no host volume named: data"},
		{name: "no isolation", vols: map[string]*structs.ClientHostVolumeConfig{"data": {Name: "data", Path: "/srv"}},
			want: `volumes: task driver "mock_driver" for "web" does not support host volumes`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := newHarness(t)
				h.hostVolumes = tc.vols
				a := volumeAlloc(false, false)
				ar := h.runner(t, a)
				go ar.Run()
				defer ar.Destroy()

				got := h.rec.waitStatus(t, a.ID, structs.AllocClientStatusFailed)
				ts := got.TaskStates["web"]
				must.True(t, ts.Failed)
				i := eventIndex(ts, structs.TaskSetupFailure)
				must.Positive(t, i+1, must.Sprint(eventTypesOf(ts)))
				must.Eq(t, tc.want, ts.Events[i].SetupError)
				must.SliceNotContains(t, eventTypesOf(ts), structs.TaskStarted)
				must.Eq(t, 0, countType(ts.Events, structs.TaskRestarting))
			})
		})
	}
}

func eventIndex(ts *structs.TaskState, typ string) int {
	for i, e := range ts.Events {
		if e.Type == typ {
			return i
		}
	}
	return -1
}
