package agent_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/nomad-edge/nomad/testutil/wait"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/command/agent/agenttest"
)

// An operator's forced garbage collection through the official client
// (PUT /v1/system/gc) removes a stopped job whose allocation has finished,
// with its evaluations and allocations, by the time the call returns; a
// running job is untouched.
func TestHTTP_SystemGC_CollectsStoppedJob(t *testing.T) {
	a := agenttest.NewDevAgent(t, nil)
	c := officialClient(t, a)
	for _, id := range []string{"done", "keep"} {
		_, _, err := c.Jobs().Register(mockJob(id, "mock_driver", map[string]any{"run_for": "5m"}), nil)
		must.NoError(t, err)
	}
	running := func(id string) func() (bool, string) {
		return func() (bool, string) {
			allocs, _, err := c.Jobs().Allocations(id, false, nil)
			if err != nil || len(allocs) != 1 {
				return false, describeStubs(allocs)
			}
			return allocs[0].ClientStatus == "running", describeStubs(allocs)
		}
	}
	wait.Poll(t, 30*time.Second, "both jobs running", func() (bool, string) {
		ok1, s1 := running("done")()
		ok2, s2 := running("keep")()
		return ok1 && ok2, s1 + " / " + s2
	})
	_, _, err := c.Jobs().Deregister("done", false, nil)
	must.NoError(t, err)
	wait.Poll(t, 30*time.Second, "the stopped job's allocation to finish", func() (bool, string) {
		allocs, _, err := c.Jobs().Allocations("done", false, nil)
		if err != nil || len(allocs) != 1 {
			return false, describeStubs(allocs)
		}
		return allocs[0].ClientStatus == "complete", describeStubs(allocs)
	})

	must.NoError(t, c.System().GarbageCollect())

	_, _, err = c.Jobs().Info("done", nil)
	code, _ := statusOf(t, err)
	must.Eq(t, http.StatusNotFound, code)
	allocs, _, err := c.Allocations().List(nil)
	must.NoError(t, err)
	must.Len(t, 1, allocs, must.Sprint(describeStubs(allocs)))
	must.Eq(t, "keep", allocs[0].JobID)
	evals, _, err := c.Jobs().Evaluations("done", nil)
	must.NoError(t, err)
	must.SliceEmpty(t, evals)

	// Only PUT, as upstream.
	code, _ = rawRequest(t, http.MethodGet, a.HTTPAddr+"/v1/system/gc", "")
	must.Eq(t, http.StatusMethodNotAllowed, code)
}
