package agent_test

import (
	"testing"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/command/agent/agenttest"
)

// Deregistering a job that does not exist is a success with nothing
// written (no evaluation, index 0), as upstream: scripts and test
// harnesses stop jobs unconditionally in their cleanup, and a stop retried
// after a lost answer must not fail.
func TestHTTP_DeregisterUnknownJob(t *testing.T) {
	a := agenttest.NewDevAgent(t, nil)
	c := officialClient(t, a)

	for _, purge := range []bool{false, true} {
		evalID, wm, err := c.Jobs().Deregister("nosuch", purge, nil)
		must.NoError(t, err, must.Sprintf("purge=%v", purge))
		must.Eq(t, "", evalID)
		must.Eq(t, uint64(0), wm.LastIndex)
	}
	evals, _, err := c.Evaluations().List(nil)
	must.NoError(t, err)
	must.Len(t, 0, evals, must.Sprint("nothing to stop creates no evaluation"))
}
