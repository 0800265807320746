package agent_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/nomad-edge/nomad/testutil/wait"

	"github.com/shoenig/test/must"
)

// /v1/client/allocation/:id/gc and /v1/client/gc, driven by the official
// client through the session a node behind NAT opened: a running
// allocation is refused with upstream's status and words, a stopped one
// is destroyed on the node at once (its directory gone), and a node-wide
// collection answers 200 with no body, as upstream's (what the official
// client's Nodes.GC and Nodes.GcAlloc expect). An operator frees an
// edge device's disk without waiting for its gc_* thresholds.
func TestClientGC_ThroughNodeSession(t *testing.T) {
	ec := newEdgeCluster(t, nil)
	alloc := ec.runRaw(t, "gc-me", "sleep 300")

	err := ec.api.Nodes().GcAlloc(alloc.ID, nil)
	code, msg := statusOf(t, err)
	must.Eq(t, http.StatusInternalServerError, code)
	must.StrContains(t, msg, "No such allocation on client, or allocation not eligible for GC")

	_, _, err = ec.api.Jobs().Deregister("gc-me", false, nil)
	must.NoError(t, err)
	wait.Poll(t, 30*time.Second, "the servers holding the allocation's end", func() (bool, string) {
		a, _, err := ec.api.Allocations().Info(alloc.ID, nil)
		if err != nil {
			return false, err.Error()
		}
		return a.ClientStatus == "complete", a.ClientStatus
	})
	wait.Poll(t, 30*time.Second, "the node collecting it on request", func() (bool, string) {
		// Until the node has heard the servers took its final state, it
		// refuses: retried, not a sleep.
		err := ec.api.Nodes().GcAlloc(alloc.ID, nil)
		return err == nil, fmt.Sprint(err)
	})
	_, err = ec.edge.Client().AllocRunner(alloc.ID)
	must.Error(t, err, must.Sprint("the node no longer holds it"))

	must.NoError(t, ec.api.Nodes().GC(ec.edge.Client().NodeID(), nil))
	resp, err := http.Get(ec.server.HTTPAddr + "/v1/client/gc?node_id=" + ec.edge.Client().NodeID())
	must.NoError(t, err)
	defer resp.Body.Close()
	must.Eq(t, http.StatusOK, resp.StatusCode)
	must.Eq(t, int64(0), resp.ContentLength)
}
