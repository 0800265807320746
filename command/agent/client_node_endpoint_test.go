package agent_test

import (
	"testing"
	"time"

	"github.com/nomad-edge/nomad/testutil/wait"

	nomadapi "github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/command/agent"
)

// /v1/client/stats answers in upstream's HostStats shape, read by the
// official client, for a node behind NAT too: the request goes through the
// session the node opened to the server (nomad node status -stats, the UI
// and dashboards read it this way).
func TestClientStats_ThroughNodeSession(t *testing.T) {
	ec := newEdgeCluster(t, nil)
	st, err := ec.api.Nodes().Stats(ec.edge.Client().NodeID(), nil)
	must.NoError(t, err)
	must.NotNil(t, st.Memory)
	must.Positive(t, st.Memory.Total)
	must.LessEq(t, st.Memory.Total, st.Memory.Used+st.Memory.Available)
	must.SliceNotEmpty(t, st.CPU)
	must.StrHasPrefix(t, "cpu", st.CPU[0].CPU)
	must.NotNil(t, st.AllocDirStats)
	must.Positive(t, st.AllocDirStats.Size)
	must.SliceNotEmpty(t, st.DiskStats)
	must.Positive(t, st.Uptime)

	// A node the servers do not know is a 404, not a hang.
	_, err = ec.api.Nodes().Stats("00000000-0000-0000-0000-000000000000", nil)
	must.ErrorContains(t, err, "404")
}

// Metadata applied at runtime reaches the servers (where ${meta.*}
// constraints read it), unsets config keys with null, and reads back as
// upstream's Meta/Static/Dynamic, through the node's session: an operator
// retags an edge device without editing its config and restarting it.
func TestNodeMeta_RoundTripThroughNodeSession(t *testing.T) {
	ec := newEdgeCluster(t, func(c *agent.Config) {
		if c.Client.Enabled {
			c.Client.Meta = map[string]string{"zone": "a", "rack": "r1"}
		}
	})
	id := ec.edge.Client().NodeID()
	r2 := "r2"
	resp, err := ec.api.Nodes().Meta().Apply(&nomadapi.NodeMetaApplyRequest{
		NodeID: id, Meta: map[string]*string{"rack": &r2, "zone": nil},
	}, nil)
	must.NoError(t, err)
	must.Eq(t, map[string]string{"rack": "r2"}, resp.Meta)
	must.Eq(t, map[string]string{"zone": "a", "rack": "r1"}, resp.Static)
	must.Eq(t, map[string]*string{"rack": &r2, "zone": nil}, resp.Dynamic)

	read, err := ec.api.Nodes().Meta().Read(id, nil)
	must.NoError(t, err)
	must.Eq(t, resp, read)

	wait.Poll(t, 30*time.Second, "the servers holding the applied metadata", func() (bool, string) {
		n, _, err := ec.api.Nodes().Info(id, nil)
		if err != nil {
			return false, err.Error()
		}
		_, zone := n.Meta["zone"]
		return n.Meta["rack"] == "r2" && !zone, "meta is " + describeMeta(n.Meta)
	})

	_, err = ec.api.Nodes().Meta().Apply(&nomadapi.NodeMetaApplyRequest{NodeID: id, Meta: map[string]*string{"": &r2}}, nil)
	must.ErrorContains(t, err, "must not be empty")
}

func describeMeta(m map[string]string) string {
	out := "{"
	for k, v := range m {
		out += k + "=" + v + " "
	}
	return out + "}"
}
