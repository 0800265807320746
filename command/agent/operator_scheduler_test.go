package agent_test

import (
	"net/http"
	"testing"

	nomadapi "github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/command/agent/agenttest"
)

// GET/PUT /v1/operator/scheduler/configuration through the official
// client: upstream's defaults, a CAS over a stale index answers
// Updated=false and writes nothing, a current one writes; values this
// version cannot honour are a 400 naming the field; RejectJobRegistration
// refuses a registration with upstream's 403.
func TestHTTP_SchedulerConfiguration(t *testing.T) {
	a := agenttest.NewDevAgent(t, nil)
	op := officialClient(t, a).Operator()
	got, _, err := op.SchedulerGetConfiguration(nil)
	must.NoError(t, err)
	cfg := got.SchedulerConfig
	must.Eq(t, nomadapi.SchedulerAlgorithmBinpack, cfg.SchedulerAlgorithm)
	must.Eq(t, nomadapi.PreemptionConfig{SystemSchedulerEnabled: true}, cfg.PreemptionConfig)
	must.False(t, cfg.MemoryOversubscriptionEnabled || cfg.RejectJobRegistration || cfg.PauseEvalBroker)

	cfg.RejectJobRegistration = true
	cfg.ModifyIndex = 12345
	set, _, err := op.SchedulerCASConfiguration(cfg, nil)
	must.NoError(t, err)
	must.False(t, set.Updated, must.Sprint("stale CAS index"))
	cfg.ModifyIndex = 0
	set, wm, err := op.SchedulerCASConfiguration(cfg, nil)
	must.NoError(t, err)
	must.True(t, set.Updated)
	must.Positive(t, wm.LastIndex)
	got, _, err = op.SchedulerGetConfiguration(nil)
	must.NoError(t, err)
	must.True(t, got.SchedulerConfig.RejectJobRegistration)
	must.Eq(t, wm.LastIndex, got.SchedulerConfig.ModifyIndex)

	_, _, err = officialClient(t, a).Jobs().Register(mockJob("refused", "mock_driver", nil), nil)
	code, body := statusOf(t, err)
	must.Eq(t, http.StatusForbidden, code)
	must.StrContains(t, body, "Job registration, dispatch, and scale are disabled by the scheduler configuration")

	for field, mutate := range map[string]func(*nomadapi.SchedulerConfiguration){
		"SchedulerAlgorithm": func(c *nomadapi.SchedulerConfiguration) { c.SchedulerAlgorithm = "fair" },
	} {
		c := *got.SchedulerConfig
		mutate(&c)
		_, _, err := op.SchedulerSetConfiguration(&c, nil)
		code, body := statusOf(t, err)
		must.Eq(t, http.StatusBadRequest, code, must.Sprint(field))
		must.StrContains(t, body, field)
	}
}
