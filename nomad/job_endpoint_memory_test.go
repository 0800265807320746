package nomad

import (
	"testing"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/nomad/mock"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// A task's memory_max is ignored while memory oversubscription is off, so
// the registering user is told, per task and in upstream's words; with it
// on there is nothing to warn about.
func TestJob_Register_WarnsMemoryMaxIgnored(t *testing.T) {
	s := testServer(t, func(c *Config) { c.NumSchedulers = 0 })
	register := func() string {
		t.Helper()
		job := mock.Job()
		job.TaskGroups[0].Tasks[0].Resources.MemoryMaxMB = 1024
		var resp structs.JobRegisterResponse
		must.NoError(t, s.RPC("Job.Register", &structs.JobRegisterRequest{Job: job}, &resp))
		return resp.Warnings
	}
	must.Eq(t, `Memory oversubscription is not enabled; Task "web.web" memory_max value will be ignored. `+
		`Update the Scheduler Configuration to allow oversubscription.`, register())

	cfg := *structs.DefaultSchedulerConfiguration()
	cfg.MemoryOversubscriptionEnabled = true
	_, err := setSchedulerConfig(t, s, cfg, false)
	must.NoError(t, err)
	must.Eq(t, "", register())
}
