package stream

import (
	"context"
	"errors"
	"time"

	"github.com/nomad-edge/nomad/nomad/structs"
)

// maxPollBatches bounds one poll's answer; the caller polls again at once.
const maxPollBatches = 64

// PollRequest is the Event.Poll RPC: a client-only agent serves
// /v1/event/stream by polling a server with it, each poll resuming where
// the last one stopped (PollResponse.NextIndex, with Resume set).
type PollRequest struct {
	Topics    map[Topic][]string
	Namespace string
	Index     uint64
	Resume    bool
	// Wait is how long the server may wait for a first batch; 0 answers
	// at once with what is there (the first poll, which only positions
	// the stream and checks the caller's token).
	Wait time.Duration
	structs.QueryOptions
}

// PollResponse carries the batches read and where to resume.
type PollResponse struct {
	Batches   []Events
	NextIndex uint64
}

// Poll answers req from b: the batches available now, or once one comes
// within req.Wait (or ctx), at most maxPollBatches of them. No batch
// within the wait is an empty answer, not an error.
func Poll(ctx context.Context, b *EventBroker, req *PollRequest) (PollResponse, error) {
	sub := b.Subscribe(SubscribeRequest{Topics: req.Topics, Namespace: req.Namespace, Index: req.Index, Resume: req.Resume})
	var out PollResponse
	wait := req.Wait
	for len(out.Batches) < maxPollBatches {
		waitCtx, cancel := context.WithTimeout(ctx, wait)
		batch, err := sub.Next(waitCtx)
		cancel()
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
			break
		}
		if err != nil {
			return PollResponse{}, err
		}
		out.Batches = append(out.Batches, batch)
		wait = 0 // take what else is there, without waiting
	}
	out.NextIndex = sub.NextIndex()
	return out, nil
}
