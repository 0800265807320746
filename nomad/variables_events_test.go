package nomad

import (
	"encoding/json"
	"testing"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/nomad/stream"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// TestEvent_VariablesTopic checks upstream's Variables topic: a set and a
// delete are VariableUpserted and VariableDeleted events keyed by path,
// whose payload is the metadata and never the items; subscribing needs
// variables list on every path of the namespace, since the events name
// them all.
func TestEvent_VariablesTopic(t *testing.T) {
	s, mgmt := aclServer(t)
	lister := clientToken(t, s, mgmt, "namespace \"default\" {\n variables {\n path \"*\" {\n capabilities = [\"list\"]\n }\n }\n}")
	narrow := clientToken(t, s, mgmt, "namespace \"default\" {\n variables {\n path \"app/*\" {\n capabilities = [\"list\", \"read\"]\n }\n }\n}")
	poll := func(secret string, index uint64) (stream.PollResponse, error) {
		var reply stream.PollResponse
		args := &stream.PollRequest{Topics: map[stream.Topic][]string{stream.TopicVariables: {"*"}}, Index: index}
		args.AuthToken = secret
		return reply, s.RPC("Event.Poll", args, &reply)
	}
	start, err := poll(lister.SecretID, 0)
	must.NoError(t, err)
	_, err = poll(narrow.SecretID, 0)
	must.ErrorIs(t, err, structs.ErrPermissionDenied)
	must.ErrorContains(t, err, `variables list on path "*" in namespace "default"`)

	const marker = "item-marker-5d1e"
	put, err := putVar(t, s, structs.VarOpSet, newVar("app/db", map[string]string{"pass": marker}), mgmt.SecretID)
	must.NoError(t, err)
	_, err = putVar(t, s, structs.VarOpDelete, newVar("app/db", nil), mgmt.SecretID)
	must.NoError(t, err)

	var events []stream.Event
	for next := start.NextIndex; len(events) < 2; {
		got, err := poll(lister.SecretID, next)
		must.NoError(t, err)
		for _, b := range got.Batches {
			events = append(events, b.Events...)
		}
		next = got.NextIndex
	}
	must.Eq(t, stream.TypeVariableUpserted, events[0].Type)
	must.Eq(t, stream.TypeVariableDeleted, events[1].Type)
	must.Eq(t, "app/db", events[0].Key)
	must.Eq(t, stream.TopicVariables, events[0].Topic)
	must.Eq(t, "app/db", events[0].Payload.Variable.Path)
	must.Eq(t, put.Output.ModifyIndex, events[0].Payload.Variable.ModifyIndex)
	b, err := json.Marshal(events)
	must.NoError(t, err)
	must.StrNotContains(t, string(b), marker)
	must.StrContains(t, string(b), `"Variable":{"Namespace":"default","Path":"app/db"`)
}
