package testutil_test

import (
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/nomad-edge/nomad/nomad/structs"
	"github.com/nomad-edge/nomad/testutil"
)

// BenchmarkVariables_Put3Servers is issue 21's `PUT /v1/var` throughput
// through three servers (benchmarks.md): Variables.Apply, what the HTTP
// route calls, sent round-robin to all three (two of three forward to the
// leader), from parallel writers, each write to its own path with 3 items;
// encryption, raft on disk (fsync on each server) and the FSM included,
// HTTP decoding not.
//
//	go test -run '^$' -bench Variables_Put3Servers -cpu 16 ./testutil/
func BenchmarkVariables_Put3Servers(b *testing.B) {
	sc := testutil.StartServers(b, testutil.ServersConfig{N: 3})
	sc.WaitForLeader()
	var seq atomic.Int64
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := seq.Add(1)
			s := sc.Servers[i%3]
			var resp structs.VariablesApplyResponse
			err := s.RPC("Variables.Apply", &structs.VariablesApplyRequest{Op: structs.VarOpSet,
				Var: &structs.VariableDecrypted{
					VariableMetadata: structs.VariableMetadata{Namespace: structs.DefaultNamespace, Path: fmt.Sprintf("bench/v%d", i)},
					Items:            structs.VariableItems{"user": "admin", "password": "s3cret", "host": "db.internal:5432"},
				}}, &resp)
			if err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "puts/s")
}
