package agent

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nomad-edge/nomad/nomad/stream"
	"github.com/nomad-edge/nomad/nomad/structs"
)

const (
	// eventHeartbeat is how long the stream may stay silent before an empty
	// object ({}) tells the client, and any proxy between, that it lives;
	// upstream's interval.
	eventHeartbeat = 10 * time.Second
	// eventWriteTimeout cuts a client that stops reading: its socket
	// buffers fill and a write blocks. Without it the handler would wait
	// on that client for ever.
	eventWriteTimeout = time.Minute
)

// answered is returned by a handler that wrote its whole answer itself
// (a stream): wrap then writes nothing more.
type answered struct{}

// eventStream handles GET /v1/event/stream: the events of the raft entries
// this agent's server applies, one JSON batch per line, until the client
// goes away. Each server publishes what its own FSM applies, so a follower
// answers as well as the leader, with no forwarding; an agent without a
// server polls one (remoteEvents).
func (s *HTTPServer) eventStream(w http.ResponseWriter, r *http.Request) (any, error) {
	req, err := parseEventRequest(r)
	if err != nil {
		return nil, err
	}
	var next eventSource
	if s.agent != nil && s.agent.server != nil {
		a, err := s.resolveACL(r)
		if err != nil {
			return nil, err
		}
		if missing := stream.Missing(a, req); missing != "" {
			return nil, refuseUnless(r, false, missing)
		}
		next = s.agent.server.EventBroker().Subscribe(req).Next
	} else if next, err = s.remoteEvents(r, req); err != nil {
		return nil, err
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	if err := writeEvents(r.Context(), w, next); err != nil {
		s.logger.Debug("event stream ended", "error", err)
	}
	return answered{}, nil
}

// eventSource returns the next batch of a stream, waiting until ctx ends.
type eventSource func(ctx context.Context) (stream.Events, error)

// remoteEvents is the stream of an agent without a server: it polls one
// of the servers (Event.Poll), each poll resuming where the last stopped.
// The first poll waits for nothing: it checks the caller's token and fixes
// where the stream starts before any answer is written.
func (s *HTTPServer) remoteEvents(r *http.Request, req stream.SubscribeRequest) (eventSource, error) {
	poll := func(ctx context.Context, args *stream.PollRequest) (stream.PollResponse, error) {
		args.Topics, args.Namespace = req.Topics, req.Namespace
		// A blocking query's transport timeout follows MaxQueryTime.
		args.MinQueryIndex, args.MaxQueryTime = 1, args.Wait
		args.AuthToken = requestToken(r)
		structs.WithRequestContext(args, ctx)
		var reply stream.PollResponse
		err := s.rpc.RPC("Event.Poll", args, &reply)
		return reply, err
	}
	first, err := poll(r.Context(), &stream.PollRequest{Index: req.Index})
	if err != nil {
		return nil, err
	}
	pending, index := first.Batches, first.NextIndex
	return func(ctx context.Context) (stream.Events, error) {
		for len(pending) == 0 {
			// The server answers a little before ctx ends, so that a batch
			// it sends is not lost to the cancelation of the call.
			wait := eventHeartbeat
			if deadline, ok := ctx.Deadline(); ok {
				wait = max(time.Until(deadline)-time.Second, 0)
			}
			resp, err := poll(ctx, &stream.PollRequest{Index: index, Resume: true, Wait: wait})
			if err != nil {
				return stream.Events{}, err
			}
			pending, index = resp.Batches, resp.NextIndex
			if len(pending) == 0 {
				return stream.Events{}, context.DeadlineExceeded // silence: a heartbeat
			}
		}
		b := pending[0]
		pending = pending[1:]
		return b, nil
	}, nil
}

// parseEventRequest reads index, namespace and the repeatable
// topic=Kind[:Key] (Key defaults to "*"; no topic at all means every one).
func parseEventRequest(r *http.Request) (stream.SubscribeRequest, error) {
	v := r.URL.Query()
	req := stream.SubscribeRequest{Namespace: v.Get("namespace")}
	if req.Namespace == "" {
		req.Namespace = "default"
	}
	if s := v.Get("index"); s != "" {
		idx, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return req, codedErrorf(http.StatusBadRequest, "Invalid index %q: must be a non-negative integer", s)
		}
		req.Index = idx
	}
	for _, t := range v["topic"] {
		kind, key, found := strings.Cut(t, ":")
		if strings.Contains(key, ":") {
			// Upstream's words: a key with a colon would be read as
			// another pair, and a subscription must not quietly select
			// something other than what was asked.
			return req, codedErrorf(http.StatusBadRequest, "Invalid topic query: error parsing topics: Invalid key value pair for topic, topic: %s", t)
		}
		if !found || key == "" {
			key = "*"
		}
		topic := stream.Topic(kind)
		if topic != stream.TopicAll && !slices.Contains(stream.Topics, topic) {
			return req, codedErrorf(http.StatusBadRequest, "Invalid topic %q: the topic must be one of *, Job, Allocation, Node, Evaluation, Deployment", t)
		}
		if req.Topics == nil {
			req.Topics = map[stream.Topic][]string{}
		}
		req.Topics[topic] = append(req.Topics[topic], key)
	}
	return req, nil
}

// writeEvents writes the subscription's batches as lines, flushing each,
// with a heartbeat ({}) after every eventHeartbeat of silence, until ctx
// ends (the client went away) or the subscription does. A subscription
// that ends otherwise (the reader lagged, the server stops) ends with a
// last line {"Error": "..."} saying why.
func writeEvents(ctx context.Context, w http.ResponseWriter, next eventSource) error {
	rc := http.NewResponseController(w)
	write := func(v any) error {
		_ = rc.SetWriteDeadline(time.Now().Add(eventWriteTimeout)) // not every writer has one
		buf, err := json.Marshal(v)
		if err != nil {
			return err
		}
		if _, err := w.Write(append(buf, '\n')); err != nil {
			return err
		}
		return rc.Flush()
	}
	if err := rc.Flush(); err != nil {
		return err
	}
	for {
		waitCtx, cancel := context.WithTimeout(ctx, eventHeartbeat)
		batch, err := next(waitCtx)
		cancel()
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case errors.Is(err, context.DeadlineExceeded):
			err = write(struct{}{})
		case err != nil:
			_ = write(map[string]string{"Error": err.Error()})
			return err
		default:
			err = write(viewEvents(batch))
		}
		if err != nil {
			return err
		}
	}
}

// eventsView is a batch as the stream writes it: nodes and allocations in
// the shape their read routes return (nodeView, allocJSON), upstream's
// legacy resource fields included.
type eventsView struct {
	Index  uint64
	Events []eventView
}

type eventView struct {
	stream.Event
	Payload eventPayloadView
}

type eventPayloadView struct {
	stream.Payload
	Node       *nodeView  `json:",omitempty"`
	Allocation *allocJSON `json:",omitempty"`
}

func viewEvents(b stream.Events) eventsView {
	out := eventsView{Index: b.Index, Events: make([]eventView, len(b.Events))}
	for i, e := range b.Events {
		ev := eventView{Event: e, Payload: eventPayloadView{Payload: e.Payload}}
		if n := e.Payload.Node; n != nil {
			v := viewNode(n)
			ev.Payload.Node = &v
		}
		if a := e.Payload.Allocation; a != nil {
			v := viewAlloc(a)
			ev.Payload.Allocation = &v
		}
		out.Events[i] = ev
	}
	return out
}
