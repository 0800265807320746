package agent_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/nomad-edge/nomad/testutil/wait"

	nomadapi "github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/command/agent/agenttest"
)

// A node's secret is what lets a caller speak for the node, so no read of
// the HTTP API may carry it: not the node itself, not the node list, not
// the allocations, evaluations or agent info that mention the node, and
// not a blocking query's answer. The official client reads the node as
// usual, and the agent's own client keeps working with the secret it
// holds (its allocation runs).
func TestHTTP_NoReadReturnsNodeSecret(t *testing.T) {
	a := agenttest.NewDevAgent(t, nil)
	c := officialClient(t, a)
	node := a.Client().Node()
	secret := node.SecretID
	must.NotEq(t, "", secret)

	resp, _, err := c.Jobs().Register(mockJob("secretive", "mock_driver", map[string]any{"run_for": "5m"}), nil)
	must.NoError(t, err)
	var allocID string
	wait.Poll(t, 30*time.Second, "the allocation to run", func() (bool, string) {
		allocs, _, err := c.Jobs().Allocations("secretive", false, nil)
		if err != nil {
			return false, err.Error()
		}
		if len(allocs) != 1 || allocs[0].ClientStatus != "running" {
			return false, describeStubs(allocs)
		}
		allocID = allocs[0].ID
		return true, ""
	})

	got, qm, err := c.Nodes().Info(node.ID, nil)
	must.NoError(t, err)
	must.Eq(t, node.ID, got.ID)
	_, _, err = c.Nodes().Info(node.ID, &nomadapi.QueryOptions{WaitIndex: qm.LastIndex - 1, WaitTime: time.Second})
	must.NoError(t, err)

	for _, path := range []string{
		"/v1/node/" + node.ID,
		"/v1/node/" + node.ID + "?index=1&wait=1s",
		"/v1/nodes",
		"/v1/node/" + node.ID + "/allocations",
		"/v1/allocations",
		"/v1/allocation/" + allocID,
		"/v1/job/secretive/allocations",
		"/v1/evaluations",
		"/v1/evaluation/" + resp.EvalID,
		"/v1/evaluation/" + resp.EvalID + "/allocations",
		"/v1/agent/self",
	} {
		code, body := rawRequest(t, http.MethodGet, a.HTTPAddr+path, "")
		must.Eq(t, http.StatusOK, code, must.Sprintf("GET %s: %s", path, body))
		must.StrNotContains(t, body, secret, must.Sprintf("GET %s returned the node's secret", path))
		if strings.HasPrefix(path, "/v1/node") {
			// Upstream's readers find the field, always empty.
			must.StrNotContains(t, body, `"SecretID":"`+secret, must.Sprintf("GET %s", path))
		}
	}
}
