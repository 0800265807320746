package testutil_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/nomad"
	"github.com/nomad-edge/nomad/nomad/structs"
	"github.com/nomad-edge/nomad/testutil"
	"github.com/nomad-edge/nomad/testutil/wait"
)

func serverHealth(t *testing.T, s *nomad.Server) *structs.OperatorHealthReply {
	t.Helper()
	var h structs.OperatorHealthReply
	must.NoError(t, s.RPC("Operator.ServerHealth", &structs.GenericRequest{}, &h))
	return &h
}

// describeHealth is what a health poll prints when it gives up.
func describeHealth(h *structs.OperatorHealthReply) string {
	out := fmt.Sprintf("healthy=%t tolerance=%d:", h.Healthy, h.FailureTolerance)
	for _, s := range h.Servers {
		out += fmt.Sprintf(" [%s serf=%s healthy=%t contact=%s term=%d index=%d]", s.Name, s.SerfStatus, s.Healthy, s.LastContact, s.LastTerm, s.LastIndex)
	}
	return out
}

// Three servers: the leader asks each follower for its raft position and
// reports all three healthy with a failure tolerance of one; asked through
// a follower, the answer is the leader's. With one server stopped the
// cluster is unhealthy, that server is named, and the tolerance is zero.
func TestServers_AutopilotHealth(t *testing.T) {
	sc := testutil.StartServers(t, testutil.ServersConfig{N: 3, Server: func(_ int, c *nomad.Config) {
		c.Autopilot.ServerStabilizationTime = 0
	}})
	leader := sc.WaitForLeader()
	follower := (leader + 1) % 3
	wait.Poll(t, 30*time.Second, "three healthy servers", func() (bool, string) {
		h := serverHealth(t, sc.Servers[follower])
		return h.Healthy && len(h.Servers) == 3 && h.FailureTolerance == 1, describeHealth(h)
	})

	stopped := (leader + 2) % 3
	stoppedID := sc.Servers[stopped].ID()
	sc.Stop(stopped)
	wait.Poll(t, 30*time.Second, "the stopped server unhealthy", func() (bool, string) {
		h := serverHealth(t, sc.Servers[leader])
		if h.Healthy || h.FailureTolerance != 0 {
			return false, describeHealth(h)
		}
		for _, s := range h.Servers {
			if s.Healthy == (s.ID == stoppedID) {
				return false, describeHealth(h)
			}
		}
		return true, ""
	})
}
