package upstreamrpc

import (
	"testing"

	"github.com/hashicorp/go-msgpack/v2/codec"
	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/nomad/mock"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// TestClientRequest_UpstreamShapes checks the two requests the client
// side translates, as upstream 1.6.5's servers read them (observed: its
// Node.GetClientAllocs refuses "missing node secret ID" without SecretID,
// and its scheduler filters a node without NodeResources.Networks with
// "missing network"): the secret moves into SecretID; a registration
// lists each IPv4 host address as a host network, on the wire and
// nothing else changed; other requests pass as they are.
func TestClientRequest_UpstreamShapes(t *testing.T) {
	q := structs.QueryOptions{Region: "global", AuthToken: "secret", MinQueryIndex: 7}
	got := clientRequest("Node.GetClientAllocs", &structs.NodeSpecificRequest{NodeID: "n1", QueryOptions: q})
	var wire map[string]any
	roundTrip(t, got, &wire)
	must.Eq(t, "n1", wire["NodeID"])
	must.Eq(t, "secret", wire["SecretID"])
	must.Eq(t, "secret", wire["AuthToken"])
	must.Eq(t, "global", wire["Region"])

	node := mock.Node()
	node.NodeResources.NodeNetworks = []*structs.NodeNetworkResource{
		{Mode: structs.NetworkModeHost, Device: "eth0", Addresses: []structs.NodeNetworkAddress{
			{Family: "ipv4", Alias: "default", Address: "10.0.0.5"}, {Family: "ipv6", Alias: "default", Address: "fd00::5"}}},
		{Mode: structs.NetworkModeBridge, Device: "nomad"},
	}
	reg := &structs.NodeRegisterRequest{Node: node}
	roundTrip(t, clientRequest("Node.Register", reg), &wire)
	res := wire["Node"].(map[string]any)["NodeResources"].(map[string]any)
	must.Eq(t, any([]any{map[string]any{"Mode": "host", "Device": "eth0", "IP": "10.0.0.5", "CIDR": "10.0.0.5/32", "MBits": int64(1000)}}), res["Networks"])
	var back structs.NodeRegisterRequest
	roundTrip(t, clientRequest("Node.Register", reg), &back)
	must.Eq(t, node.ID, back.Node.ID)
	must.Eq(t, node.NodeResources.NodeNetworks, back.Node.NodeResources.NodeNetworks)

	other := &structs.NodeUpdateStatusRequest{NodeID: "n1"}
	must.Eq(t, any(other), clientRequest("Node.UpdateStatus", other))
}

func roundTrip(t *testing.T, in, out any) {
	t.Helper()
	var buf []byte
	must.NoError(t, codec.NewEncoderBytes(&buf, Handle).Encode(in))
	must.NoError(t, codec.NewDecoderBytes(buf, Handle).Decode(out))
}
