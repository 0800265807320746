package nomad

import (
	"bytes"
	"io"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/nomad/structs"
)

// Pool upserts and deletes go through raft; a follower restoring a
// snapshot gets the pools with their disconnect policy, so a restarted
// server places new allocations under the same policy; a delete the
// state store refuses comes back as the entry's response, not a panic.
func TestFSM_NodePools(t *testing.T) {
	leader := testFSM(t)
	applyEntry(t, leader, 10, structs.NodePoolUpsertRequestType, &structs.NodePoolUpsertRequest{
		NodePools: []*structs.NodePool{{Name: "edge", Description: "LTE",
			Disconnect: &structs.NodePoolDisconnect{LostAfter: time.Hour}}, {Name: "gone"}}})
	applyEntry(t, leader, 11, structs.NodePoolDeleteRequestType, &structs.NodePoolDeleteRequest{Names: []string{"gone"}})

	buf, err := structs.Encode(structs.NodePoolDeleteRequestType, &structs.NodePoolDeleteRequest{Names: []string{"default"}})
	must.NoError(t, err)
	resp := leader.Apply(&raft.Log{Index: 12, Data: buf})
	err, _ = resp.(error)
	must.ErrorIs(t, err, structs.ErrInvalidRequest)

	snap, err := leader.Snapshot()
	must.NoError(t, err)
	sink := &bufferSink{}
	must.NoError(t, snap.Persist(sink))
	follower := testFSM(t)
	must.NoError(t, follower.Restore(io.NopCloser(bytes.NewReader(sink.Bytes()))))
	p, err := follower.State().NodePoolByName(nil, "edge")
	must.NoError(t, err)
	must.NotNil(t, p)
	must.Eq(t, time.Hour, p.Disconnect.LostAfter)
	gone, err := follower.State().NodePoolByName(nil, "gone")
	must.NoError(t, err)
	must.Nil(t, gone)
	def, err := follower.State().NodePoolByName(nil, "default")
	must.NoError(t, err)
	must.NotNil(t, def)
}
