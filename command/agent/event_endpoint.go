package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nomad-edge/nomad/acl"
	"github.com/nomad-edge/nomad/nomad/stream"
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
// answers as well as the leader, with no forwarding.
func (s *HTTPServer) eventStream(w http.ResponseWriter, r *http.Request) (any, error) {
	if s.agent == nil || s.agent.server == nil {
		return nil, codedErrorf(http.StatusNotImplemented, "the event stream is served by server agents: ask a server's HTTP address")
	}
	req, err := parseEventRequest(r)
	if err != nil {
		return nil, err
	}
	a, err := s.resolveACL(r)
	if err != nil {
		return nil, err
	}
	if err := refuseEvents(r, a, req); err != nil {
		return nil, err
	}
	sub := s.agent.server.EventBroker().Subscribe(req)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	if err := writeEvents(r.Context(), w, sub); err != nil {
		s.logger.Debug("event stream ended", "error", err)
	}
	return answered{}, nil
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

// refuseEvents asks of the caller what the read endpoints of each topic
// ask: node read for Node, read-job in the namespace for the others, and,
// as upstream, a management token for every topic at once.
func refuseEvents(r *http.Request, a *acl.ACL, req stream.SubscribeRequest) error {
	if len(req.Topics) == 0 || req.Topics[stream.TopicAll] != nil {
		return refuseUnless(r, a.IsManagement(), "a management token (the * topic, or no topic, streams every topic)")
	}
	for topic := range req.Topics {
		if topic == stream.TopicNode {
			if err := refuseUnless(r, a.AllowNodeRead(), "node read"); err != nil {
				return err
			}
			continue
		}
		if !a.AllowNamespaceOperation(req.Namespace, acl.NamespaceCapabilityReadJob) {
			return refuseUnless(r, false, fmt.Sprintf("%s in namespace %q", acl.NamespaceCapabilityReadJob, req.Namespace))
		}
	}
	return nil
}

// writeEvents writes the subscription's batches as lines, flushing each,
// with a heartbeat ({}) after every eventHeartbeat of silence, until ctx
// ends (the client went away) or the subscription does. A subscription
// that ends otherwise (the reader lagged, the server stops) ends with a
// last line {"Error": "..."} saying why.
func writeEvents(ctx context.Context, w http.ResponseWriter, sub *stream.Subscription) error {
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
		batch, err := sub.Next(waitCtx)
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
			err = write(batch)
		}
		if err != nil {
			return err
		}
	}
}
