package allocrunner

import (
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/client/clienttest"
	"github.com/nomad-edge/nomad/drivers"
	"github.com/nomad-edge/nomad/drivers/mock"
	"github.com/nomad-edge/nomad/helper/clock"
)

// chrootDriver is a mock that says it chroots its tasks, as exec does.
type chrootDriver struct{ drivers.Driver }

func (chrootDriver) Capabilities() drivers.Capabilities {
	return drivers.Capabilities{FSIsolation: drivers.FSIsolationChroot}
}

// A task whose driver chroots it is told the paths it will see
// (/local, /alloc, /secrets), in its environment and in its config's
// ${NOMAD_TASK_DIR} references, while the driver still gets the host paths
// to build the chroot from, and the task's user and memory_max.
func TestTaskConfig_ChrootPaths(t *testing.T) {
	a := clienttest.MockAlloc("node-1", nil)
	task := a.Job.TaskGroups[0].Tasks[0]
	task.User = "nobody"
	task.Config = map[string]any{"command": "${NOMAD_TASK_DIR}/app"}
	a.AllocatedResources.Tasks[task.Name].Memory.MemoryMaxMB = 512
	ad := NewAllocDir("/var/nomad/alloc", a.ID)
	m, err := mock.New(drivers.Options{}, nil)
	must.NoError(t, err)

	for _, tc := range []struct {
		name   string
		driver drivers.Driver
		local  string
		alloc  string
	}{
		{name: "host paths", driver: m, local: ad.TaskDir(task.Name).LocalDir, alloc: ad.SharedDir},
		{name: "chroot", driver: chrootDriver{m}, local: "/local", alloc: "/alloc"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := newTaskRunner(taskRunnerConfig{logger: hclog.NewNullLogger(), clock: clock.Real(),
				alloc: a, task: task, allocDir: ad, driver: tc.driver})
			cfg := tr.taskConfig()
			must.Eq(t, tc.local, cfg.Env["NOMAD_TASK_DIR"])
			must.Eq(t, tc.alloc, cfg.Env["NOMAD_ALLOC_DIR"])
			must.Eq[any](t, tc.local+"/app", cfg.Config["command"])
			td := ad.TaskDir(task.Name)
			must.Eq(t, td.Dir, cfg.TaskDir)
			must.Eq(t, td.LocalDir, cfg.LocalDir)
			must.Eq(t, td.SecretsDir, cfg.SecretsDir)
			must.Eq(t, ad.SharedDir, cfg.AllocDir)
			must.Eq(t, "nobody", cfg.User)
			must.Eq(t, 512, cfg.Resources.MemoryMaxMB)
		})
	}
}
