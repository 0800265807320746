package agent_test

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/nomad-edge/nomad/testutil/wait"

	nomadapi "github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/command/agent/agenttest"
)

// PUT /v1/node/:id/evaluate creates a node-update evaluation for every job
// with an allocation on the node, as upstream's; the official client's
// ForceEvaluate reaches it; an unknown node is a 404.
func TestHTTP_NodeEvaluate(t *testing.T) {
	a := agenttest.NewDevAgent(t, nil)
	c := officialClient(t, a)
	_, _, err := c.Jobs().Register(mockJob("evaluated", "mock_driver", map[string]any{"run_for": "5m"}), nil)
	must.NoError(t, err)
	nodes, _, err := c.Nodes().List(nil)
	must.NoError(t, err)
	nodeID := nodes[0].ID
	wait.Poll(t, 10*time.Second, "the allocation", func() (bool, string) {
		allocs, _, err := c.Nodes().Allocations(nodeID, nil)
		return err == nil && len(allocs) == 1, "error: " + errString(err)
	})

	_, wm, err := c.Nodes().ForceEvaluate(nodeID, nil)
	must.NoError(t, err)
	must.Positive(t, wm.LastIndex)

	code, body := rawRequest(t, http.MethodPut, a.HTTPAddr+"/v1/node/"+nodeID+"/evaluate", "")
	must.Eq(t, http.StatusOK, code, must.Sprint(body))
	var resp struct {
		EvalIDs         []string
		EvalCreateIndex uint64
	}
	must.NoError(t, json.Unmarshal([]byte(body), &resp))
	must.Len(t, 1, resp.EvalIDs)
	must.Positive(t, resp.EvalCreateIndex)
	eval, _, err := c.Evaluations().Info(resp.EvalIDs[0], nil)
	must.NoError(t, err)
	must.Eq(t, "node-update", eval.TriggeredBy)
	must.Eq(t, "evaluated", eval.JobID)
	must.Eq(t, nodeID, eval.NodeID)

	code, _ = rawRequest(t, http.MethodPut, a.HTTPAddr+"/v1/node/00000000-0000-0000-0000-000000000000/evaluate", "")
	must.Eq(t, http.StatusNotFound, code)
}

// DELETE /v1/evaluations answers as upstream's: while the eval broker
// runs a well-formed request is refused (409) saying the broker must be
// paused, deleting nothing; once PauseEvalBroker is set through the
// official client it deletes by IDs and by filter and counts what it
// deleted; a malformed request is a 400 naming the problem.
func TestHTTP_EvalDelete(t *testing.T) {
	a := agenttest.NewDevAgent(t, nil)
	c := officialClient(t, a)
	resp, _, err := c.Jobs().Register(mockJob("kept", "mock_driver", map[string]any{"run_for": "5m"}), nil)
	must.NoError(t, err)
	other, _, err := c.Jobs().Register(mockJob("filtered", "mock_driver", map[string]any{"run_for": "5m"}), nil)
	must.NoError(t, err)

	_, err = c.Evaluations().Delete([]string{resp.EvalID}, nil)
	code, body := statusOf(t, err)
	must.Eq(t, http.StatusConflict, code)
	must.StrContains(t, body, "eval broker must be paused to delete evals")
	_, _, err = c.Evaluations().DeleteOpts(&nomadapi.EvalDeleteRequest{Filter: `JobID == "kept"`}, nil)
	code, _ = statusOf(t, err)
	must.Eq(t, http.StatusConflict, code)
	_, _, err = c.Evaluations().DeleteOpts(&nomadapi.EvalDeleteRequest{Filter: `JobID == "no-such-job"`}, nil)
	code, _ = statusOf(t, err)
	must.Eq(t, http.StatusConflict, code, must.Sprint("a filter matching nothing is refused alike"))
	_, _, err = c.Evaluations().Info(resp.EvalID, nil)
	must.NoError(t, err, must.Sprint("nothing was deleted"))

	for body, want := range map[string]string{
		`{}`: "evals must be deleted by either ID or filter",
		`{"EvalIDs": ["x"], "Filter": "JobID == \"kept\""}`: "evals cannot be deleted by ID and filter",
		`{"Filter": "JobID =="}`:                            "failed to read filter expression",
	} {
		code, got := rawRequest(t, http.MethodDelete, a.HTTPAddr+"/v1/evaluations", body)
		must.Eq(t, http.StatusBadRequest, code, must.Sprint(body))
		must.StrContains(t, got, want)
	}

	cfg, _, err := c.Operator().SchedulerGetConfiguration(nil)
	must.NoError(t, err)
	cfg.SchedulerConfig.PauseEvalBroker = true
	_, _, err = c.Operator().SchedulerSetConfiguration(cfg.SchedulerConfig, nil)
	must.NoError(t, err)

	_, err = c.Evaluations().Delete([]string{resp.EvalID}, nil)
	must.NoError(t, err)
	_, _, err = c.Evaluations().Info(resp.EvalID, nil)
	code, _ = statusOf(t, err)
	must.Eq(t, http.StatusNotFound, code, must.Sprint("deleted by ID"))
	del, _, err := c.Evaluations().DeleteOpts(&nomadapi.EvalDeleteRequest{Filter: `JobID == "filtered"`}, nil)
	must.NoError(t, err)
	must.Eq(t, 1, del.Count)
	_, _, err = c.Evaluations().Info(other.EvalID, nil)
	code, _ = statusOf(t, err)
	must.Eq(t, http.StatusNotFound, code, must.Sprint("deleted by filter"))
}
