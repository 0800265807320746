package agent

import (
	"errors"
	"net/http"

	"github.com/nomad-edge/nomad/client"
	"github.com/nomad-edge/nomad/client/allocrunner"
)

// clientGC handles /v1/client/gc (?node_id= names the node, as upstream):
// the node destroys every terminal allocation it may, now, whatever its
// gc_* thresholds. Those whose final state has not reached the servers
// stay (client.CollectAll). The answer is 200 with no body, as upstream
// 1.6.5's: the official Go client's Nodes.GC and Nodes.GcAlloc expect
// none (its Allocations.GC expects one and fails on upstream's answer as
// on ours).
func (s *HTTPServer) clientGC(_ http.ResponseWriter, _ *http.Request, c *client.Client) error {
	c.CollectAll()
	return nil
}

// allocGC handles /v1/client/allocation/{alloc}/gc: the node destroys
// that terminal allocation now (its directory, logs included). One that
// still runs is refused in upstream's words and status (500); a terminal
// one whose final state the servers have not taken is refused with 409:
// destroyed, it would leave them believing it runs. Done, it answers as
// clientGC does.
func (s *HTTPServer) allocGC(_ http.ResponseWriter, _ *http.Request, ar *allocrunner.AllocRunner) error {
	err := s.agent.client.CollectAllocation(ar.ID())
	switch {
	case errors.Is(err, client.ErrFinalStateUndelivered):
		return codedErrorf(http.StatusConflict, "%v", err)
	case err != nil:
		return codedErrorf(http.StatusInternalServerError, "%v", err)
	}
	return nil
}
