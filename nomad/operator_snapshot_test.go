package nomad

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"testing"

	"github.com/hashicorp/raft"
	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/helper/snapshot"
	"github.com/nomad-edge/nomad/nomad/mock"
	"github.com/nomad-edge/nomad/nomad/structs"
	"github.com/nomad-edge/nomad/nomad/upstreamrpc"
)

// hasTimer reports whether the leader keeps a heartbeat timer for the node.
func hasTimer(s *Server, nodeID string) bool {
	s.heartbeats.mu.Lock()
	defer s.heartbeats.mu.Unlock()
	_, ok := s.heartbeats.timers[nodeID]
	return ok
}

// After a restore the leader's in-memory duties follow the restored state,
// as a new leader's would: heartbeat timers for the snapshot's nodes and
// none for a node registered after it, and the snapshot's pending
// evaluation back in the broker. Without the rebuild the leader would
// time out a node that no longer exists and never schedule the restored
// evaluation.
func TestSnapshotRestore_RebuildsLeaderState(t *testing.T) {
	s := testServer(t, func(c *Config) { c.NumSchedulers = 0 })
	kept := registerNode(t, s)
	eval := mock.Eval()
	_, _, err := s.raftApply(structs.EvalUpdateRequestType, &structs.EvalUpdateRequest{Evals: []*structs.Evaluation{eval}})
	must.NoError(t, err)

	var buf bytes.Buffer
	_, err = s.SnapshotSave(&buf)
	must.NoError(t, err)
	a, err := snapshot.Read(&buf, t.TempDir())
	must.NoError(t, err)
	defer a.Close()

	later := registerNode(t, s)
	// The eval leaves the broker and the state as a worker would take it.
	_, _, err = s.raftApply(structs.EvalDeleteRequestType, &structs.EvalDeleteRequest{Evals: []string{eval.ID}})
	must.NoError(t, err)
	must.True(t, hasTimer(s, later.ID))

	must.NoError(t, s.SnapshotRestore(context.Background(), a))
	must.True(t, s.IsLeader())
	must.True(t, hasTimer(s, kept.ID))
	must.False(t, hasTimer(s, later.ID), must.Sprint("no timer for a node the restore removed"))
	got, err := s.State().EvalByID(nil, eval.ID)
	must.NoError(t, err)
	must.NotNil(t, got)
	must.EqOp(t, 1, s.evalBroker.Stats().TotalReady, must.Sprint("the restored evaluation is queued again"))
}

// A state.bin upstream Nomad wrote that cannot be read is refused with a
// clear error; a stream neither ours nor upstream's too.
func TestPersistStream_RefusesForeignStreams(t *testing.T) {
	_, _, err := persistStream(bytes.NewReader([]byte{0x80, 0x05}), 2)
	must.True(t, errors.Is(err, ErrUpstreamSnapshot))
	_, _, err = persistStream(bytes.NewReader([]byte{0xc1}), 1)
	must.True(t, errors.Is(err, ErrNotStateStream))
	r, size, err := persistStream(bytes.NewReader([]byte{0x00, 0x01}), 2)
	must.NoError(t, err)
	must.EqOp(t, int64(2), size)
	var got [2]byte
	_, err = r.Read(got[:])
	must.NoError(t, err)
	must.EqOp(t, [2]byte{0x00, 0x01}, got)
}

// An upstream 1.6.5 snapshot file restores into a running server: every
// job, node, allocation and token its state.bin carries is in the state
// afterwards with its ID, indexes and secret, and the leader's duties
// follow it (a heartbeat timer for each restored node). This is the path
// an operator takes to bring an upstream cluster's state here
// (upgrading.md).
func TestSnapshotRestore_UpstreamFile(t *testing.T) {
	s := testServer(t, func(c *Config) { c.NumSchedulers = 0 })
	// The state.bin of a real upstream cluster's snapshot with jobs,
	// versions, allocations, pools and tokens (upstreamrpc's fixture), in
	// the archive upstream writes around it.
	f, err := os.Open("upstreamrpc/testdata/snapshot-state.bin.gz")
	must.NoError(t, err)
	defer f.Close()
	gz, err := gzip.NewReader(f)
	must.NoError(t, err)
	stateBin, err := io.ReadAll(gz)
	must.NoError(t, err)
	want, err := upstreamrpc.ReadSnapshotState(bytes.NewReader(stateBin))
	must.NoError(t, err)
	must.SliceNotEmpty(t, want.Jobs)
	must.SliceNotEmpty(t, want.Nodes)
	must.SliceNotEmpty(t, want.ACLTokens)
	var buf bytes.Buffer
	meta := &raft.SnapshotMeta{Version: 1, ID: "2-" + fmt.Sprint(want.Index) + "-1", Index: want.Index, Term: 2, Size: int64(len(stateBin))}
	must.NoError(t, snapshot.Write(&buf, meta, bytes.NewReader(stateBin)))
	a, err := snapshot.Read(&buf, t.TempDir())
	must.NoError(t, err)
	defer a.Close()
	must.NoError(t, s.SnapshotRestore(context.Background(), a))
	st := s.State()
	for _, j := range want.Jobs {
		got, err := st.JobByID(nil, j.Namespace, j.ID)
		must.NoError(t, err)
		must.NotNil(t, got, must.Sprintf("job %s/%s", j.Namespace, j.ID))
		must.EqOp(t, j.ModifyIndex, got.ModifyIndex)
		must.EqOp(t, j.Version, got.Version)
	}
	for _, n := range want.Nodes {
		got, err := st.NodeByID(nil, n.ID)
		must.NoError(t, err)
		must.NotNil(t, got)
		must.EqOp(t, n.SecretID, got.SecretID)
		must.True(t, hasTimer(s, n.ID), must.Sprintf("a heartbeat timer for restored node %s", n.ID))
	}
	for _, al := range want.Allocs {
		got, err := st.AllocByID(nil, al.ID)
		must.NoError(t, err)
		must.NotNil(t, got)
		must.EqOp(t, al.CreateIndex, got.CreateIndex)
	}
	for _, tok := range want.ACLTokens {
		got, err := st.ACLTokenBySecretID(nil, tok.SecretID)
		must.NoError(t, err)
		must.NotNil(t, got)
		must.EqOp(t, tok.AccessorID, got.AccessorID)
	}
}
