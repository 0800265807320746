package nomad

import (
	"errors"
	"testing"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/nomad/mock"
	"github.com/nomad-edge/nomad/nomad/stream"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// Event.Poll, which client-only agents stream through, asks what
// GET /v1/event/stream asks on a server: read-job for Job events, node
// read for Node events, a management token for every topic; and it
// answers with the batches after the index it was given.
func TestEvent_PollACLAndResume(t *testing.T) {
	s, mgmt := aclServer(t)
	reader := clientToken(t, s, mgmt, `namespace "default" { policy = "read" }`)
	poll := func(secret string, topic stream.Topic, index uint64) (stream.PollResponse, error) {
		var reply stream.PollResponse
		args := &stream.PollRequest{Topics: map[stream.Topic][]string{topic: {"*"}}, Index: index}
		args.AuthToken = secret
		err := s.RPC("Event.Poll", args, &reply)
		return reply, err
	}

	start, err := poll(reader.SecretID, stream.TopicJob, 0)
	must.NoError(t, err)
	_, err = poll(reader.SecretID, stream.TopicNode, 0)
	must.True(t, errors.Is(err, structs.ErrPermissionDenied), must.Sprint(err))
	must.ErrorContains(t, err, "node read")
	_, err = poll(reader.SecretID, stream.TopicAll, 0)
	must.ErrorContains(t, err, "management")
	_, err = poll("", stream.TopicJob, 0)
	must.True(t, errors.Is(err, structs.ErrPermissionDenied), must.Sprint(err))

	job := mock.Job()
	var reg structs.JobRegisterResponse
	must.NoError(t, s.RPC("Job.Register", &structs.JobRegisterRequest{Job: job,
		WriteRequest: structs.WriteRequest{AuthToken: mgmt.SecretID}}, &reg))
	got, err := poll(reader.SecretID, stream.TopicJob, start.NextIndex)
	must.NoError(t, err)
	must.SliceNotEmpty(t, got.Batches)
	must.Eq(t, reg.JobModifyIndex, got.Batches[0].Index)
	must.Eq(t, job.ID, got.Batches[0].Events[0].Key)
	must.Greater(t, reg.JobModifyIndex, got.NextIndex)
}
