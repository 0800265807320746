package nomad

import (
	"time"

	"github.com/nomad-edge/nomad/acl"
	"github.com/nomad-edge/nomad/nomad/stream"
)

// maxEventPollWait bounds how long one Event.Poll holds its caller.
const maxEventPollWait = time.Minute

// Event is the Event.* RPC endpoint: the event stream for agents without
// a server of their own.
type Event struct {
	srv *Server
}

// Poll returns the batches of this server's event stream after
// args.Index (see stream.Poll), with the checks of GET /v1/event/stream.
// It is answered by the server it reaches, never forwarded: every server
// publishes the same batches at the same indexes.
func (e *Event) Poll(args *stream.PollRequest, reply *stream.PollResponse) error {
	a, _, err := e.srv.resolveToken(args.AuthToken)
	if err != nil {
		return err
	}
	req := stream.SubscribeRequest{Topics: args.Topics, Namespace: args.Namespace}
	if missing := stream.Missing(a, req); missing != "" {
		return check(a, args.AuthToken, permission{allow: func(*acl.ACL) bool { return false }, what: missing})
	}
	args.Wait = min(max(args.Wait, 0), maxEventPollWait)
	out, err := stream.Poll(args.Context(), e.srv.EventBroker(), args)
	if err != nil {
		return err
	}
	*reply = out
	return nil
}
