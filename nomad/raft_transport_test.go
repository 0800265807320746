package nomad

import (
	"net"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	"github.com/shoenig/test/must"
)

// The servers' raft transport replicates without hashicorp/raft's
// pipeline, which deadlocks once a follower refuses an entry (one whose
// disk fails its writes): the leader would never send that follower an
// entry again, and could not shut down (see newRaftNetTransport).
func TestRaftNetTransport_NoPipeline(t *testing.T) {
	addr := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 4647}
	trans := newRaftNetTransport(newRaftLayer(addr, nil, nil, nil), hclog.NewNullLogger())
	defer trans.Close()
	p, err := trans.AppendEntriesPipeline("peer", "127.0.0.1:1")
	must.ErrorIs(t, err, raft.ErrPipelineReplicationNotSupported)
	must.Nil(t, p)
}
