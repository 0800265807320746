package nomad

import (
	"fmt"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/nomad/mock"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// TestNode_EmitEvents checks that events a client reports about its node
// (what an upstream client sends when a driver's health changes) are
// added to the node's history, newest kept, and that only the node's own
// secret may add them, to a node that exists.
func TestNode_EmitEvents(t *testing.T) {
	s := testServer(t, nil)
	node := mock.Node()
	var reg structs.NodeUpdateResponse
	must.NoError(t, s.RPC("Node.Register", &structs.NodeRegisterRequest{Node: node}, &reg))

	at := time.Date(2026, 12, 2, 5, 49, 46, 0, time.UTC)
	ev := &structs.NodeEvent{Subsystem: "Driver", Message: "disabled", Details: map[string]string{"driver": "mock_driver"}, Timestamp: at}
	req := &structs.EmitNodeEventsRequest{NodeEvents: map[string][]*structs.NodeEvent{node.ID: {ev}}}
	req.AuthToken = node.SecretID
	var reply structs.EmitNodeEventsResponse
	must.NoError(t, s.RPC("Node.EmitEvents", req, &reply))
	must.Positive(t, reply.Index)
	got, err := s.State().NodeByID(nil, node.ID)
	must.NoError(t, err)
	last := got.Events[len(got.Events)-1]
	must.Eq(t, "disabled", last.Message)
	must.Eq(t, "mock_driver", last.Details["driver"])
	must.Eq(t, reply.Index, last.CreateIndex)
	must.True(t, at.Equal(last.Timestamp))

	// More than a node keeps: the newest survive.
	var many []*structs.NodeEvent
	for i := range structs.MaxRetainedNodeEvents + 5 {
		many = append(many, &structs.NodeEvent{Subsystem: "Driver", Message: fmt.Sprintf("e%d", i), Timestamp: at})
	}
	req.NodeEvents = map[string][]*structs.NodeEvent{node.ID: many}
	must.NoError(t, s.RPC("Node.EmitEvents", req, &reply))
	got, err = s.State().NodeByID(nil, node.ID)
	must.NoError(t, err)
	must.Len(t, structs.MaxRetainedNodeEvents, got.Events)
	must.Eq(t, fmt.Sprintf("e%d", structs.MaxRetainedNodeEvents+4), got.Events[len(got.Events)-1].Message)

	req.NodeEvents = map[string][]*structs.NodeEvent{node.ID: {ev}}
	req.AuthToken = "not-the-secret"
	must.ErrorIs(t, s.RPC("Node.EmitEvents", req, &reply), structs.ErrNodeSecretMismatch)
	req.NodeEvents = map[string][]*structs.NodeEvent{"no-such-node": {ev}}
	must.ErrorIs(t, s.RPC("Node.EmitEvents", req, &reply), structs.ErrUnknownNode)
	req.NodeEvents = map[string][]*structs.NodeEvent{node.ID: {nil}}
	req.AuthToken = node.SecretID
	must.ErrorIs(t, s.RPC("Node.EmitEvents", req, &reply), structs.ErrInvalidRequest)
}
