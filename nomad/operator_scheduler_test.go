package nomad

import (
	"errors"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/nomad/mock"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// setSchedulerConfig writes cfg through the Operator endpoint, as the HTTP
// API does, and returns whether it was written.
func setSchedulerConfig(t *testing.T, s *Server, cfg structs.SchedulerConfiguration, cas bool) (bool, error) {
	t.Helper()
	var reply structs.SchedulerSetConfigurationResponse
	err := s.RPC("Operator.SchedulerSetConfiguration", &structs.SchedulerSetConfigRequest{Config: cfg, CAS: cas}, &reply)
	return reply.Updated, err
}

func pausedConfig(paused bool) structs.SchedulerConfiguration {
	c := *structs.DefaultSchedulerConfiguration()
	c.PauseEvalBroker = paused
	return c
}

// PauseEvalBroker stops the leader's broker from handing out evaluations,
// including ones written while paused and across a leadership change (the
// setting is in raft); unsetting it hands them out again. Operators pause
// to stop scheduling during an incident and to delete evaluations safely.
func TestOperator_PauseEvalBroker(t *testing.T) {
	s := testServer(t, func(c *Config) { c.NumSchedulers = 0 })
	_, err := setSchedulerConfig(t, s, pausedConfig(true), false)
	must.NoError(t, err)
	must.False(t, s.evalBroker.Enabled())

	job := mock.Job()
	var resp structs.JobRegisterResponse
	must.NoError(t, s.RPC("Job.Register", &structs.JobRegisterRequest{Job: job}, &resp))
	_, _, err = s.evalBroker.Dequeue([]string{job.Type}, time.Millisecond)
	must.ErrorIs(t, err, ErrBrokerDisabled, must.Sprint("nothing is dequeued while paused"))

	s.revokeLeadership()
	must.NoError(t, s.establishLeadership())
	must.False(t, s.evalBroker.Enabled(), must.Sprint("a new leadership term keeps the broker paused"))

	_, err = setSchedulerConfig(t, s, pausedConfig(false), false)
	must.NoError(t, err)
	ev, token, err := s.evalBroker.Dequeue([]string{job.Type}, time.Second)
	must.NoError(t, err)
	must.NotNil(t, ev, must.Sprint("resuming hands out the evaluation written while paused"))
	must.Eq(t, resp.EvalID, ev.ID)
	must.NoError(t, s.evalBroker.Ack(ev.ID, token))
}

// Eval.Delete deletes only while the broker is paused (the FSM checks the
// stored configuration), and a deleted evaluation is not handed out on
// resume: deleting evaluations a worker may hold would corrupt its plan.
func TestEval_DeleteOnlyWhilePaused(t *testing.T) {
	s := testServer(t, func(c *Config) { c.NumSchedulers = 0 })
	job := mock.Job()
	var resp structs.JobRegisterResponse
	must.NoError(t, s.RPC("Job.Register", &structs.JobRegisterRequest{Job: job}, &resp))

	var del structs.EvalDeleteUserResponse
	err := s.RPC("Eval.Delete", &structs.EvalDeleteUserRequest{EvalIDs: []string{resp.EvalID}}, &del)
	must.ErrorIs(t, err, structs.ErrEvalBrokerNotPaused)
	stored, err := s.State().EvalByID(nil, resp.EvalID)
	must.NoError(t, err)
	must.NotNil(t, stored, must.Sprint("a refused delete deletes nothing"))

	_, err = setSchedulerConfig(t, s, pausedConfig(true), false)
	must.NoError(t, err)
	must.NoError(t, s.RPC("Eval.Delete", &structs.EvalDeleteUserRequest{EvalIDs: []string{resp.EvalID, "no-such-eval"}}, &del))
	must.Eq(t, 1, del.Count)
	stored, err = s.State().EvalByID(nil, resp.EvalID)
	must.NoError(t, err)
	must.Nil(t, stored)

	_, err = setSchedulerConfig(t, s, pausedConfig(false), false)
	must.NoError(t, err)
	must.True(t, s.evalBroker.Enabled())
	must.Eq(t, 0, s.evalBroker.Stats().TotalReady, must.Sprint("the deleted evaluation is not handed out"))
}

// A CAS write over a stale index is not applied and says so; a value this
// version cannot honour is refused naming the field.
func TestOperator_SchedulerConfigCASAndRefusals(t *testing.T) {
	s := testServer(t, func(c *Config) { c.NumSchedulers = 0 })
	var get structs.SchedulerConfigurationResponse
	must.NoError(t, s.RPC("Operator.SchedulerGetConfiguration", &structs.GenericRequest{}, &get))
	must.Eq(t, structs.DefaultSchedulerConfiguration(), get.SchedulerConfig)

	cfg := pausedConfig(false)
	cfg.RejectJobRegistration = true
	cfg.ModifyIndex = 999
	updated, err := setSchedulerConfig(t, s, cfg, true)
	must.NoError(t, err)
	must.False(t, updated, must.Sprint("no configuration is stored at index 999"))
	cfg.ModifyIndex = 0
	updated, err = setSchedulerConfig(t, s, cfg, true)
	must.NoError(t, err)
	must.True(t, updated)

	for field, mutate := range map[string]func(*structs.SchedulerConfiguration){
		"SchedulerAlgorithm": func(c *structs.SchedulerConfiguration) { c.SchedulerAlgorithm = "fair" },
	} {
		c := *structs.DefaultSchedulerConfiguration()
		mutate(&c)
		_, err := setSchedulerConfig(t, s, c, false)
		must.ErrorIs(t, err, structs.ErrInvalidRequest, must.Sprint(field))
		must.StrContains(t, err.Error(), field)
	}

	// Every combination of the preemption switches, and memory
	// oversubscription, is honoured and so accepted.
	c := *structs.DefaultSchedulerConfiguration()
	c.MemoryOversubscriptionEnabled = true
	c.PreemptionConfig = structs.PreemptionConfig{SysBatchSchedulerEnabled: true, BatchSchedulerEnabled: true, ServiceSchedulerEnabled: true}
	updated, err = setSchedulerConfig(t, s, c, false)
	must.NoError(t, err)
	must.True(t, updated)
}

// RejectJobRegistration refuses registrations with upstream's error while
// set (with ACLs off there is no management token to bypass it), so an
// operator can shed load during an incident.
func TestJob_RegisterRejectedByConfig(t *testing.T) {
	s := testServer(t, func(c *Config) { c.NumSchedulers = 0 })
	cfg := pausedConfig(false)
	cfg.RejectJobRegistration = true
	_, err := setSchedulerConfig(t, s, cfg, false)
	must.NoError(t, err)
	var resp structs.JobRegisterResponse
	err = s.RPC("Job.Register", &structs.JobRegisterRequest{Job: mock.Job()}, &resp)
	must.True(t, errors.Is(err, structs.ErrJobRegistrationDisabled) || errors.Is(err, structs.ErrPermissionDenied), must.Sprint(err))
	must.StrContains(t, err.Error(), "disabled by the scheduler configuration")

	_, err = setSchedulerConfig(t, s, pausedConfig(false), false)
	must.NoError(t, err)
	must.NoError(t, s.RPC("Job.Register", &structs.JobRegisterRequest{Job: mock.Job()}, &resp))
}
