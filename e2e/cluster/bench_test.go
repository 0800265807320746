package cluster

import (
	"fmt"
	"testing"

	nomadapi "github.com/hashicorp/nomad/api"
)

// BenchmarkCluster_JobRegisterHTTP measures job registrations as an
// operator's tools make them: HTTP requests, through the official Go
// client, to a follower of three real server processes on loopback with
// raft on disk. Each is decoded, forwarded to the leader over RPC, written
// to raft, replicated and fsynced by a majority, then scheduled (no client
// runs, so each evaluation ends blocked). 32 concurrent callers.
//
//	go test -run '^$' -bench Cluster_JobRegisterHTTP -benchtime 3000x ./e2e/cluster/
func BenchmarkCluster_JobRegisterHTTP(b *testing.B) {
	c := newCluster(b, clusterOpts{servers: 3})
	c.startServers()
	follower := c.follower()
	api := follower.API()
	rate := registerLoad(b, api, 32, func(i int) *nomadapi.Job { return mockJob(fmt.Sprintf("bench-%d", i)) })
	b.ReportMetric(rate, "registrations/s")
}
