package agent_test

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/nomad-edge/nomad/testutil/wait"

	nomadapi "github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/command/agent/agenttest"
)

// The official client's drain, eligibility and purge calls work against
// our agent, and the node it reads back carries upstream's drain fields.
func TestHTTP_NodeDrainEligibilityPurge_OfficialClient(t *testing.T) {
	a := agenttest.NewDevAgent(t, nil)
	c := officialClient(t, a)
	nodeID := a.Client().NodeID()

	resp, err := c.Nodes().UpdateDrainOpts(nodeID, &nomadapi.DrainOptions{
		DrainSpec: &nomadapi.DrainSpec{Deadline: time.Hour, IgnoreSystemJobs: true},
		Meta:      map[string]string{"reason": "kernel upgrade"},
	}, nil)
	must.NoError(t, err)
	must.Positive(t, resp.NodeModifyIndex)
	must.Positive(t, resp.LastIndex)

	// With nothing on the node the drainer completes the drain at once.
	var node *nomadapi.Node
	wait.Poll(t, 10*time.Second, "drain complete", func() (bool, string) {
		node, _, err = c.Nodes().Info(nodeID, nil)
		must.NoError(t, err)
		return node.DrainStrategy == nil && node.LastDrain != nil && node.LastDrain.Status == nomadapi.DrainStatusComplete,
			"drain " + node.SchedulingEligibility
	})
	must.False(t, node.Drain)
	must.Eq(t, nomadapi.NodeSchedulingIneligible, node.SchedulingEligibility)
	must.Eq(t, map[string]string{"reason": "kernel upgrade"}, node.LastDrain.Meta)
	msgs := []string{}
	for _, e := range node.Events {
		msgs = append(msgs, e.Message)
	}
	must.SliceContains(t, msgs, "Node drain complete")

	_, err = c.Nodes().ToggleEligibility(nodeID, true, nil)
	must.NoError(t, err)
	node, _, err = c.Nodes().Info(nodeID, nil)
	must.NoError(t, err)
	must.Eq(t, nomadapi.NodeSchedulingEligible, node.SchedulingEligibility)

	// A drain in progress shows its strategy; eligibility cannot undo it.
	_, err = c.Nodes().UpdateDrain(nodeID, &nomadapi.DrainSpec{Deadline: -1}, false, nil)
	must.NoError(t, err)
	_, err = c.Nodes().UpdateDrain(nodeID, nil, true, nil)
	must.NoError(t, err)

	_, err = c.Nodes().ToggleEligibility("0c1e0a55-0000-0000-0000-000000000000", true, nil)
	must.Error(t, err)
	must.StrContains(t, err.Error(), "404")

	purge, _, err := c.Nodes().Purge(nodeID, nil)
	must.NoError(t, err)
	must.Positive(t, purge.NodeModifyIndex)
	_, _, err = c.Nodes().Info(nodeID, nil)
	must.Error(t, err)
	must.True(t, strings.Contains(err.Error(), "404"), must.Sprint(err))
}

// Bad drain and eligibility bodies are 400s naming the field.
func TestHTTP_NodeDrainEligibility_BadInput(t *testing.T) {
	a := agenttest.NewDevAgent(t, nil)
	nodeID := a.Client().NodeID()
	cases := []struct{ path, body, want string }{
		{"/eligibility", `{"Eligibility": "maybe"}`, "Eligibility"},
		{"/drain", `{"DrainSpec": {"Deadline": 1, "Bogus": 1}}`, "DrainSpec.Bogus"},
		{"/drain", `{"DrainSpec": {"Deadline": "1h"}}`, "Deadline"},
	}
	for _, tc := range cases {
		req, err := http.NewRequest(http.MethodPut, a.HTTPAddr+"/v1/node/"+nodeID+tc.path, strings.NewReader(tc.body))
		must.NoError(t, err)
		resp, err := http.DefaultClient.Do(req)
		must.NoError(t, err)
		body, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		must.Eq(t, http.StatusBadRequest, resp.StatusCode, must.Sprint(tc.body, ": ", string(body)))
		must.StrContains(t, string(body), tc.want)
	}
}
