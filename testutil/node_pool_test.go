package testutil_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/client"
	"github.com/nomad-edge/nomad/nomad/structs"
	"github.com/nomad-edge/nomad/testutil"
	"github.com/nomad-edge/nomad/testutil/fault"
	"github.com/nomad-edge/nomad/testutil/wait"
)

// A job whose group sets no disconnect window, placed in a node pool whose
// disconnect policy has lost_after, gets that window: when its client is
// cut off the allocation becomes unknown, not lost, and the servers say
// where the policy came from. This is what lets a fleet set the policy
// once where the links are flaky instead of in every job file.
func TestCluster_NodePoolDisconnectPolicy_UnknownNotLost(t *testing.T) {
	testutil.Bubble(t, func(t *testing.T) {
		c := testutil.NewMemCluster(t, testutil.MemClusterConfig{
			Servers: 1,
			Clients: 2,
			Client:  func(_ int, cfg *client.Config) { cfg.NodePool = "edge" },
		})
		st := c.Leader().State
		var resp structs.GenericResponse
		must.NoError(t, c.Leader().RPC("NodePool.UpsertNodePools", &structs.NodePoolUpsertRequest{
			NodePools: []*structs.NodePool{{Name: "edge", Disconnect: &structs.NodePoolDisconnect{LostAfter: time.Hour}}},
		}, &resp))

		job := disconnectJob()
		job.NodePool = "edge"
		job.TaskGroups[0].Disconnect = nil
		original, cut := runOne(t, c, job)
		must.Eq(t, "edge", original.PoolDisconnect.Pool)
		p := original.DisconnectPolicy()
		must.Eq(t, structs.DisconnectSourceNodePool, p.Source)
		must.Eq(t, "lost_after 1h, replace true, reconcile best_score (from node pool edge)", p.String())

		c.Links[cut].Cut(fault.Blackhole)
		wait.Eventually(t, time.Minute, "node disconnected, original unknown", func() (bool, string) {
			a, err := st().AllocByID(nil, original.ID)
			must.NoError(t, err)
			n, err := st().NodeByID(nil, original.NodeID)
			must.NoError(t, err)
			return n.Status == structs.NodeStatusDisconnected && a.ClientStatus == structs.AllocClientStatusUnknown,
				fmt.Sprintf("node %s, alloc %s", n.Status, a.ClientStatus)
		})
		a, err := st().AllocByID(nil, original.ID)
		must.NoError(t, err)
		must.NotEq(t, structs.AllocClientStatusLost, a.ClientStatus)
	})
}
