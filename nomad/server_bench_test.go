package nomad

import (
	"context"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/nomad-edge/nomad/nomad/mock"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// BenchmarkServer_Place1000 measures the server path of a 1,000-count job:
// Job.Register through raft, the broker, a worker's scheduler pass and the
// plan applier, until every placement is committed. No client runs.
//
//	go test -run '^$' -bench Server_Place1000 -benchmem ./nomad/
func BenchmarkServer_Place1000(b *testing.B) {
	cfg := DefaultConfig()
	cfg.DevMode = true
	cfg.RPCAddr = nil
	cfg.Logger = hclog.NewNullLogger()
	s, err := NewServer(cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Shutdown()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.WaitForLeader(ctx); err != nil {
		b.Fatal(err)
	}
	for i := 0; i < 10; i++ {
		node := mock.Node()
		node.NodeResources.Memory.MemoryMB = 64 * 1024
		var resp structs.NodeUpdateResponse
		if err := s.RPC("Node.Register", &structs.NodeRegisterRequest{Node: node}, &resp); err != nil {
			b.Fatal(err)
		}
	}

	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		job := mock.Job()
		tg := job.TaskGroups[0]
		tg.Count = 1000
		tg.EphemeralDisk.SizeMB = 10
		tg.Tasks[0].Resources = &structs.Resources{CPU: 1, MemoryMB: 10}
		var reg structs.JobRegisterResponse
		if err := s.RPC("Job.Register", &structs.JobRegisterRequest{Job: job}, &reg); err != nil {
			b.Fatal(err)
		}
		var out structs.JobAllocationsResponse
		for len(out.Allocations) < 1000 {
			req := &structs.JobSpecificRequest{JobID: job.ID, QueryOptions: structs.QueryOptions{
				Namespace: job.Namespace, MinQueryIndex: out.Index, MaxQueryTime: 5 * time.Second}}
			if err := s.RPC("Job.Allocations", req, &out); err != nil {
				b.Fatal(err)
			}
		}
	}
}
