package upstreamrpc

import (
	"io"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/hashicorp/go-msgpack/v2/codec"
	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/nomad/structs"
)

func fixture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	must.NoError(t, err)
	return b
}

// decodeFixture decodes a captured body into out, as serverCodec does.
func decodeFixture(t *testing.T, name string, out any) {
	t.Helper()
	must.NoError(t, codec.NewDecoderBytes(fixture(t, name), Handle).Decode(out), must.Sprintf("decoding %s", name))
}

// TestIsUpstreamByTheByteAfterTheConnType checks that a captured upstream
// connection and our own node session, which share their first byte, are
// told apart by the next one, and that neither handler loses a byte:
// getting this wrong would break our own clients' sessions.
func TestIsUpstreamByTheByteAfterTheConnType(t *testing.T) {
	open := fixture(t, "conn-open.bin")
	must.Eq(t, ConnMultiplexV2, open[0])

	var hello []byte
	must.NoError(t, codec.NewEncoderBytes(&hello, structs.MsgpackHandle).Encode(&structs.NodeSessionHello{NodeID: "n1", SecretID: "s1"}))

	for _, tc := range []struct {
		name     string
		after    []byte
		upstream bool
	}{
		{"upstream 1.6.5 client", open[1:], true},
		{"our node session", hello, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, b := net.Pipe()
			defer a.Close()
			go func() { _, _ = b.Write(tc.after); b.Close() }()
			conn, up, err := IsUpstream(a)
			must.NoError(t, err)
			must.Eq(t, tc.upstream, up)
			got, err := io.ReadAll(conn)
			must.NoError(t, err)
			must.Eq(t, tc.after, got)
		})
	}
}

// TestCapturedRequestsDecodeIntoOurs checks that each client request an
// upstream 1.6.5 client sent decodes into our request type with the
// fields our endpoints check: a renamed field of ours would silently
// drop what the upstream client says.
func TestCapturedRequestsDecodeIntoOurs(t *testing.T) {
	var reg structs.NodeRegisterRequest
	decodeFixture(t, "register-request.msgpack", &reg)
	must.NotNil(t, reg.Node)
	n := reg.Node
	must.Eq(t, "fa4e21c8-a1a1-b188-2135-ca6b2837787a", n.ID)
	must.NotEq(t, "", n.SecretID)
	must.Eq(t, "1.6.5", n.Attributes["nomad.version"], must.Sprint("the version gate reads the client's real version"))
	must.Eq(t, "dc1", n.Datacenter)
	must.Eq(t, "default", n.NodePool)
	must.Eq(t, "initializing", n.Status)
	must.True(t, n.Drivers["raw_exec"] != nil && n.Drivers["raw_exec"].Healthy)
	must.Positive(t, n.NodeResources.Cpu.CpuShares)
	must.Positive(t, n.NodeResources.Memory.MemoryMB)
	must.Eq(t, 20000, n.NodeResources.MinDynamicPort)

	var hb structs.NodeUpdateStatusRequest
	decodeFixture(t, "update-status-request.msgpack", &hb)
	must.Eq(t, n.ID, hb.NodeID)
	must.Eq(t, "ready", hb.Status)
	must.Eq(t, n.SecretID, hb.AuthToken)

	var ca structs.NodeSpecificRequest
	decodeFixture(t, "get-client-allocs-request.msgpack", &ca)
	must.Eq(t, n.ID, ca.NodeID)
	must.Eq(t, n.SecretID, ca.AuthToken)
	must.Eq(t, uint64(1), ca.MinQueryIndex)
	must.True(t, ca.AllowStale)

	var ga structs.AllocsGetRequest
	decodeFixture(t, "get-allocs-request.msgpack", &ga)
	must.Eq(t, []string{"dd252d0e-10d6-51ba-dbcf-0bbab0e89aff"}, ga.AllocIDs)
	must.Eq(t, n.SecretID, ga.AuthToken)

	var ua structs.AllocUpdateRequest
	decodeFixture(t, "update-alloc-request.msgpack", &ua)
	must.Len(t, 1, ua.Alloc)
	a := ua.Alloc[0]
	must.Eq(t, "running", a.ClientStatus)
	must.Eq(t, n.ID, a.NodeID)
	must.NotNil(t, a.DeploymentStatus)
	must.True(t, *a.DeploymentStatus.Healthy)
	must.False(t, a.DeploymentStatus.Timestamp.IsZero(), must.Sprint("upstream's binary time decodes"))
	must.Eq(t, "running", a.TaskStates["t"].State)
	must.False(t, a.TaskStates["t"].StartedAt.IsZero())

	// From another run: the mock driver turned itself off.
	var ev structs.EmitNodeEventsRequest
	decodeFixture(t, "emit-events-request.msgpack", &ev)
	must.MapLen(t, 1, ev.NodeEvents)
	must.NotEq(t, "", ev.AuthToken)
	for _, events := range ev.NodeEvents {
		must.Len(t, 1, events)
		must.Eq(t, "Driver", events[0].Subsystem)
		must.Eq(t, "disabled", events[0].Message)
		must.Eq(t, "mock_driver", events[0].Details["driver"])
		must.False(t, events[0].Timestamp.IsZero())
	}
}

// TestRegisterMarksTheNodeUpstream checks that a node registering over
// upstream's protocol is marked so (AttrUpstream), keeping its real
// version: the disconnect gate judges it by upstream's numbering.
func TestRegisterMarksTheNodeUpstream(t *testing.T) {
	var reg structs.NodeRegisterRequest
	decodeFixture(t, "register-request.msgpack", &reg)
	must.NoError(t, translateRequest("Node.Register", &reg))
	must.Eq(t, "true", reg.Node.Attributes[AttrUpstream])
	must.Eq(t, "1.6.5", reg.Node.Attributes["nomad.version"])
}

// TestUpdateAllocTakesTheNodeFromItsAllocations checks that an upstream
// Node.UpdateAlloc, which names its node only on each allocation, reaches
// our endpoint with the request's NodeID set, which is what it authorises
// by; allocations of several nodes leave it empty, so the endpoint refuses.
func TestUpdateAllocTakesTheNodeFromItsAllocations(t *testing.T) {
	var ua structs.AllocUpdateRequest
	decodeFixture(t, "update-alloc-request.msgpack", &ua)
	must.Eq(t, "", ua.NodeID)
	must.NoError(t, translateRequest("Node.UpdateAlloc", &ua))
	must.Eq(t, "fa4e21c8-a1a1-b188-2135-ca6b2837787a", ua.NodeID)

	mixed := &structs.AllocUpdateRequest{Alloc: []*structs.Allocation{{ID: "a", NodeID: "n1"}, {ID: "b", NodeID: "n2"}}}
	must.NoError(t, translateRequest("Node.UpdateAlloc", mixed))
	must.Eq(t, "", mixed.NodeID)
}

// TestTimesKeepUpstreamsBinaryForm checks that a time we send back is in
// the form upstream's client decodes (time.Time's binary form, not
// msgpack's timestamp extension our own handle writes): the deployment
// health timestamp and a task's start time survive a round trip through
// our model byte for byte.
func TestTimesKeepUpstreamsBinaryForm(t *testing.T) {
	raw := fixture(t, "update-alloc-request.msgpack")
	var ua structs.AllocUpdateRequest
	decodeFixture(t, "update-alloc-request.msgpack", &ua)
	var out []byte
	must.NoError(t, codec.NewEncoderBytes(&out, Handle).Encode(&ua))

	pick := func(b []byte) (ts, started any) {
		var m map[string]any
		must.NoError(t, codec.NewDecoderBytes(b, Handle).Decode(&m))
		a := m["Alloc"].([]any)[0].(map[string]any)
		ts = a["DeploymentStatus"].(map[string]any)["Timestamp"]
		started = a["TaskStates"].(map[string]any)["t"].(map[string]any)["StartedAt"]
		return ts, started
	}
	wantTS, wantStarted := pick(raw)
	gotTS, gotStarted := pick(out)
	must.Eq(t, wantTS, gotTS)
	must.Eq(t, wantStarted, gotStarted)
}

// TestOurAllocReplyKeepsUpstreamsFields checks which fields of an
// allocation, as an upstream server sends it to its client, our model
// does not carry: exactly those listed in testdata/get-allocs-reply.dropped
// (legacy resources, Consul, Vault, identity and CSI fields, features we
// do not have or keep elsewhere). A field of ours renamed or removed shows up here before an
// upstream client misses it.
func TestOurAllocReplyKeepsUpstreamsFields(t *testing.T) {
	raw := fixture(t, "get-allocs-reply.msgpack")
	var ours structs.AllocsGetResponse
	decodeFixture(t, "get-allocs-reply.msgpack", &ours)
	must.Len(t, 1, ours.Allocs)
	must.Eq(t, "raw_exec", ours.Allocs[0].Job.TaskGroups[0].Tasks[0].Driver)

	var out []byte
	must.NoError(t, codec.NewEncoderBytes(&out, Handle).Encode(&ours))
	theirs, kept := fieldPaths(t, raw), fieldPaths(t, out)
	var dropped []string
	for p := range theirs {
		if !kept[p] {
			dropped = append(dropped, p)
		}
	}
	sort.Strings(dropped)
	want := strings.Fields(string(fixture(t, "get-allocs-reply.dropped")))
	must.Eq(t, want, dropped, must.Sprintf("fields upstream sends that we drop changed; the list is:\n%s", strings.Join(dropped, "\n")))
}

// fieldPaths lists every field path of a msgpack document that holds a
// value, maps' keys joined with dots, list elements as [] (the keys of
// free-form maps, such as a task's config, are paths too).
func fieldPaths(t *testing.T, b []byte) map[string]bool {
	t.Helper()
	var v any
	must.NoError(t, codec.NewDecoderBytes(b, Handle).Decode(&v))
	out := map[string]bool{}
	var walk func(prefix string, v any)
	walk = func(prefix string, v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				walk(prefix+"."+k, e)
			}
		case []any:
			for _, e := range x {
				walk(prefix+"[]", e)
			}
		case nil:
			// Absent and null are the same to a decoder; ours leaves
			// out empty fields (omitempty) that upstream writes as nil.
		default:
			out[prefix] = true
		}
	}
	walk("", v)
	return out
}

// TestHeartbeatIndexOnlyWhenTheStatusChanged checks that a heartbeat which
// changed nothing answers with zero indexes, as upstream's servers do (its
// client reads a non-zero one as "my status was changed" and logs a missed
// heartbeat), and that a change still carries its index.
func TestHeartbeatIndexOnlyWhenTheStatusChanged(t *testing.T) {
	s := newSession()
	hb := &structs.NodeUpdateStatusRequest{NodeID: "n1", Status: "ready"}
	reg := &structs.NodeUpdateResponse{NodeModifyIndex: 8, Index: 8}
	s.translateReply("Node.Register", &structs.NodeRegisterRequest{Node: &structs.Node{ID: "n1"}}, reg)
	must.Eq(t, uint64(8), reg.Index)

	same := &structs.NodeUpdateResponse{NodeModifyIndex: 8, Index: 8}
	s.translateReply("Node.UpdateStatus", hb, same)
	must.Eq(t, uint64(0), same.Index)
	must.Eq(t, uint64(0), same.NodeModifyIndex)

	changed := &structs.NodeUpdateResponse{NodeModifyIndex: 12, Index: 12}
	s.translateReply("Node.UpdateStatus", hb, changed)
	must.Eq(t, uint64(12), changed.Index)
}
