package nomad

import (
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/nomad/structs"
)

// A read of a table never written reports index 0, as upstream's; but
// Node.GetClientAllocs, whose index the client feeds back as its next
// MinQueryIndex, never reports 0, so a client of a cluster without
// allocations blocks instead of spinning.
func TestBlockingRPC_IndexZeroButClientAllocsBlock(t *testing.T) {
	s := authTestServer(t)
	node := registerNode(t, s)

	var jobs structs.JobListResponse
	must.NoError(t, s.RPC("Job.List", &structs.JobListRequest{}, &jobs))
	must.Eq(t, uint64(0), jobs.Index)

	var allocs structs.NodeClientAllocsResponse
	args := &structs.NodeSpecificRequest{NodeID: node.ID, QueryOptions: structs.QueryOptions{AuthToken: node.SecretID}}
	must.NoError(t, s.RPC("Node.GetClientAllocs", args, &allocs))
	must.Eq(t, uint64(1), allocs.Index)

	// Fed back, it blocks until the wait ends.
	args.MinQueryIndex, args.MaxQueryTime = allocs.Index, 50*time.Millisecond
	start := time.Now()
	must.NoError(t, s.RPC("Node.GetClientAllocs", args, &allocs))
	must.GreaterEq(t, 50*time.Millisecond, time.Since(start))
}
