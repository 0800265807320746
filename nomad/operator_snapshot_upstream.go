package nomad

import (
	"bufio"
	"io"
	"maps"
	"slices"

	"github.com/hashicorp/go-msgpack/v2/codec"

	"github.com/nomad-edge/nomad/nomad/state"
	"github.com/nomad-edge/nomad/nomad/structs"
	"github.com/nomad-edge/nomad/nomad/upstreamrpc"
)

// upstreamPersistStream decodes the state.bin of an upstream Nomad
// snapshot (upstreamrpc.ReadSnapshotState) and streams what it carries as
// our persist stream. The whole file is decoded before the first record
// is written, so a file that cannot be read fails here, before raft sees
// anything. What it does not carry is listed by `nomad operator snapshot
// inspect` (upgrading.md, "Upstream snapshots").
func upstreamPersistStream(r io.Reader) (io.Reader, error) {
	st, err := upstreamrpc.ReadSnapshotState(r)
	if err != nil {
		return nil, err
	}
	pr, pw := io.Pipe()
	go func() {
		bw := bufio.NewWriter(pw)
		err := writeUpstreamRecords(codec.NewEncoder(bw, structs.MsgpackHandle), st)
		if err == nil {
			err = bw.Flush()
		}
		pw.CloseWithError(err)
	}()
	return pr, nil
}

// writeUpstreamRecords writes st's objects as the FSM persists ours: the
// index table first, then each table's objects, by kind.
func writeUpstreamRecords(enc *codec.Encoder, st *upstreamrpc.SnapshotState) error {
	for _, key := range slices.Sorted(maps.Keys(st.Indexes)) {
		if err := encodeRecord(enc, state.SnapshotIndex, &state.IndexEntry{Key: key, Value: st.Indexes[key]}); err != nil {
			return err
		}
	}
	lists := []struct {
		kind state.SnapshotKind
		objs []any
	}{
		{state.SnapshotNode, anys(st.Nodes)},
		{state.SnapshotJob, anys(st.Jobs)},
		{state.SnapshotJobSummary, anys(st.JobSummaries)},
		{state.SnapshotEval, anys(st.Evals)},
		{state.SnapshotAlloc, anys(st.Allocs)},
		{state.SnapshotACLPolicy, anys(st.ACLPolicies)},
		{state.SnapshotACLToken, anys(st.ACLTokens)},
		{state.SnapshotNamespace, anys(st.Namespaces)},
		{state.SnapshotJobVersion, anys(st.JobVersions)},
		{state.SnapshotScalingEvents, anys(st.ScalingEvents)},
		{state.SnapshotNodePool, anys(st.NodePools)},
		{state.SnapshotDeployment, anys(st.Deployments)},
		{state.SnapshotServiceRegistration, anys(st.ServiceRegistrations)},
	}
	for _, l := range lists {
		for _, obj := range l.objs {
			if err := encodeRecord(enc, l.kind, obj); err != nil {
				return err
			}
		}
	}
	if st.SchedulerConfig != nil {
		if err := encodeRecord(enc, state.SnapshotSchedulerConfig, state.SchedulerConfigSnapshotObject(st.SchedulerConfig)); err != nil {
			return err
		}
	}
	return nil
}

func anys[T any](objs []*T) []any {
	out := make([]any, len(objs))
	for i, o := range objs {
		out[i] = o
	}
	return out
}
