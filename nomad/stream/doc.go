// Package stream is the servers' event stream: a bounded in-memory buffer
// of the changes each raft entry made to the state store, and the
// subscriptions that read it (GET /v1/event/stream).
//
// # Where events come from
//
// The state store calls a hook after every committed write transaction with
// the objects it changed (go-memdb change tracking). The FSM collects the
// changes of one raft entry and hands them, with the entry's message type
// and raft index, to FromChanges, which names the topic and type of each
// change as upstream Nomad does; the FSM then publishes the batch. So an
// event exists only for a change that committed, and carries its index.
//
// Every server applies the whole log, so every server's broker holds the
// same events: a follower streams them itself, with no forwarding.
//
// # Memory
//
// The broker keeps the newest BufferSize batches in a ring. A subscription
// is only a cursor into it; the broker keeps nothing per subscriber. A
// subscriber that falls further behind than the ring reaches gets
// ErrSubscriptionLagged and must subscribe again, from an index it chooses:
// a slow reader can never make a server hold more than the ring.
package stream
