package agent_test

import (
	"testing"
	"time"

	nomadapi "github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/command/agent/agenttest"
)

// scalingJob is a service job whose group carries a scaling block with an
// autoscaler policy, built with the official client as the autoscaler's
// users submit it.
func scalingJob(id string, count int, min, max int64) *nomadapi.Job {
	job := nomadapi.NewServiceJob(id, id, "global", 50)
	job.Datacenters = []string{"dc1"}
	tg := nomadapi.NewTaskGroup("g", count).AddTask(nomadapi.NewTask("t", "mock_driver").SetConfig("run_for", "1h"))
	tg.Scaling = &nomadapi.ScalingPolicy{
		Min: &min, Max: &max,
		Policy: map[string]any{
			"cooldown": "10s",
			"check": []any{map[string]any{"avg_cpu": []any{map[string]any{
				"source": "nomad-apm", "query": "avg_cpu",
				"strategy": []any{map[string]any{"target-value": []any{map[string]any{"target": 50.0}}}},
			}}}},
		},
	}
	job.AddTaskGroup(tg)
	return job
}

// The official client reads scaling policies from our agent as from
// upstream, which is how the Nomad Autoscaler discovers what to scale: the
// list (with its job and type filters, and namespace "*"), one policy by
// ID with its opaque body returned as given, an ID that survives a new job
// version, and a 404 for an unknown ID.
func TestAgent_ScalingPolicies_OfficialClient(t *testing.T) {
	dev := agenttest.NewDevAgent(t, nil)
	c, err := nomadapi.NewClient(&nomadapi.Config{Address: dev.HTTPAddr})
	must.NoError(t, err)

	_, _, err = c.Jobs().Register(scalingJob("web", 2, 1, 5), nil)
	must.NoError(t, err)
	_, _, err = c.Jobs().Register(scalingJob("api", 1, 1, 3), nil)
	must.NoError(t, err)

	list, qm, err := c.Scaling().ListPolicies(nil)
	must.NoError(t, err)
	must.Len(t, 2, list)
	must.Positive(t, qm.LastIndex)

	list, _, err = c.Scaling().ListPolicies(&nomadapi.QueryOptions{Params: map[string]string{"job": "web"}})
	must.NoError(t, err)
	must.Len(t, 1, list)
	stub := list[0]
	must.Eq(t, map[string]string{"Namespace": "default", "Job": "web", "Group": "g"}, stub.Target)
	must.Eq(t, "horizontal", stub.Type)
	must.True(t, stub.Enabled)

	none, _, err := c.Scaling().ListPolicies(&nomadapi.QueryOptions{Params: map[string]string{"type": "vertical_cpu"}})
	must.NoError(t, err)
	must.SliceEmpty(t, none)
	all, _, err := c.Scaling().ListPolicies(&nomadapi.QueryOptions{Namespace: "*"})
	must.NoError(t, err)
	must.Len(t, 2, all)

	p, _, err := c.Scaling().GetPolicy(stub.ID, nil)
	must.NoError(t, err)
	must.Eq(t, 1, *p.Min)
	must.Eq(t, 5, *p.Max)
	must.Eq(t, "10s", p.Policy["cooldown"])
	check := p.Policy["check"].([]any)[0].(map[string]any)["avg_cpu"].([]any)[0].(map[string]any)
	must.Eq(t, "avg_cpu", check["query"])

	v2 := scalingJob("web", 3, 1, 6)
	_, _, err = c.Jobs().Register(v2, nil)
	must.NoError(t, err)
	p2, _, err := c.Scaling().GetPolicy(stub.ID, nil)
	must.NoError(t, err)
	must.Eq(t, 6, *p2.Max)
	must.Eq(t, p.CreateIndex, p2.CreateIndex)
	must.Greater(t, p.ModifyIndex, p2.ModifyIndex)

	info, _, err := c.Jobs().Info("web", nil)
	must.NoError(t, err)
	must.Eq(t, stub.ID, info.TaskGroups[0].Scaling.ID)

	_, _, err = c.Scaling().GetPolicy("00000000-0000-0000-0000-000000000000", nil)
	must.ErrorContains(t, err, "404")
}

// A scaling block the servers cannot honour is a 400 naming the field:
// max is required and the count must lie within min..max.
func TestAgent_ScalingPolicies_Validation(t *testing.T) {
	dev := agenttest.NewDevAgent(t, nil)
	c, err := nomadapi.NewClient(&nomadapi.Config{Address: dev.HTTPAddr})
	must.NoError(t, err)

	job := scalingJob("web", 2, 1, 5)
	job.TaskGroups[0].Scaling.Max = nil
	_, _, err = c.Jobs().Register(job, nil)
	must.ErrorContains(t, err, "max must be specified")

	_, _, err = c.Jobs().Register(scalingJob("web", 7, 1, 5), nil)
	must.ErrorContains(t, err, "task group count (7) must not be greater than max (5)")
}

// A blocking list of scaling policies returns when a job write changes
// them, which is how the autoscaler learns of new policies without
// polling.
func TestAgent_ScalingPolicies_Blocking(t *testing.T) {
	dev := agenttest.NewDevAgent(t, nil)
	c, err := nomadapi.NewClient(&nomadapi.Config{Address: dev.HTTPAddr})
	must.NoError(t, err)
	_, qm, err := c.Scaling().ListPolicies(nil)
	must.NoError(t, err)

	type result struct {
		n   int
		err error
	}
	done := make(chan result, 1)
	go func() {
		// Floored at 1 as the autoscaler does: a table never written
		// reports index 0, which means "do not block".
		list, _, err := c.Scaling().ListPolicies(&nomadapi.QueryOptions{WaitIndex: max(qm.LastIndex, 1), WaitTime: time.Minute})
		done <- result{len(list), err}
	}()
	_, _, err = c.Jobs().Register(scalingJob("web", 2, 1, 5), nil)
	must.NoError(t, err)
	r := <-done
	must.NoError(t, r.err)
	must.Eq(t, 1, r.n)
}
