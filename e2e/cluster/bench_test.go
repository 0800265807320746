package cluster

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	nomadapi "github.com/hashicorp/nomad/api"
)

// BenchmarkCluster_JobRegisterHTTP measures job registrations as an
// operator's tools make them: HTTP requests, through the official Go
// client, to a follower of three real server processes on loopback with
// raft on disk. Each is decoded, forwarded to the leader over RPC, written
// to raft, replicated and fsynced by a majority, then scheduled (no client
// runs, so each evaluation ends blocked). 32 concurrent callers. Ours and
// upstream 1.6.5's three servers side by side, in alternating rounds of
// a fresh cluster each, as BenchmarkDevAgent_JobRegisterHTTP does; it
// reports the three servers' CPU per registration too. NOMAD_BENCH_PPROF=dir
// keeps our leader's and the follower's profiles there (cluster-*.pprof).
//
//	go test -run '^$' -bench Cluster_JobRegisterHTTP -benchtime 3000x ./e2e/cluster/
func BenchmarkCluster_JobRegisterHTTP(b *testing.B) {
	for round := range benchRounds() {
		for _, which := range []string{"ours", "upstream"} {
			b.Run(fmt.Sprintf("round=%d/%s", round+1, which), func(b *testing.B) {
				dir := os.Getenv("NOMAD_BENCH_PPROF")
				o := clusterOpts{servers: 3, upstream: which == "upstream"}
				if dir != "" && !o.upstream {
					o.serverExtra = "enable_debug = true\n"
				}
				c := newCluster(b, o)
				c.startServers()
				follower := c.follower()
				api := follower.API()
				var stopProfiles []func()
				if dir != "" && !o.upstream {
					stopProfiles = append(stopProfiles,
						profileAgent(b, c.waitLeader(10*time.Second, ""), dir, "cluster-leader-"),
						profileAgent(b, follower, dir, "cluster-follower-"))
				}
				var pids []int
				for _, s := range c.servers {
					pids = append(pids, s.PID())
				}
				cpu := startCPU(pids...)
				rate := registerLoad(b, api, 32, func(i int) *nomadapi.Job { return mockJob(fmt.Sprintf("bench-%d", i)) })
				cpu.report(b)
				for _, stop := range stopProfiles {
					stop()
				}
				b.ReportMetric(rate, "registrations/s")
			})
		}
	}
}

// BenchmarkCluster_VariablePutHTTP measures PUT /v1/var/:path over HTTP
// through three servers with raft on disk, round-robin over them (two of
// three forward to the leader), from 16 concurrent writers, each write a
// new path with one 64-byte item: the full path of a variable write, the
// HTTP decoding, encryption and the fsync included. Run with
// -benchtime 2000x.
func BenchmarkCluster_VariablePutHTTP(b *testing.B) {
	c := newCluster(b, clusterOpts{servers: 3})
	c.startServers()
	var apis []*nomadapi.Client
	for _, s := range c.servers {
		apis = append(apis, s.API())
	}
	value := strings.Repeat("v", 64)
	rate := callLoad(b, 16, "variable writes", func(i int) error {
		v := &nomadapi.Variable{Path: fmt.Sprintf("bench/%d", i), Items: nomadapi.VariableItems{"k": value}}
		_, _, err := apis[i%len(apis)].Variables().Update(v, nil)
		return err
	})
	b.ReportMetric(rate, "puts/s")
}
