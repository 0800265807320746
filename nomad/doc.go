// Package nomad is the server: it owns the replicated state and everything
// that runs on the raft leader.
//
//   - fsm.go: the raft FSM, applying msgpack log entries to the go-memdb
//     state store deterministically (time comes from the entries).
//     fsm_events.go publishes what each applied entry committed to the
//     event stream (package stream), on every server.
//   - rpc.go and the *_endpoint.go files: the msgpack RPC endpoints (Job,
//     Node, Alloc, Eval, Plan, Status) over yamux streams, blocking queries,
//     forwarding to the leader.
//   - leader.go: duties taken up on winning an election (eval broker,
//     blocked evals, plan queue, heartbeat timers, reapers) and dropped on
//     losing it.
//   - eval_broker.go, blocked_evals.go, plan_queue.go, plan_apply.go: the
//     path from an evaluation to committed allocations.
//   - worker.go: scheduling workers, the scheduler's Planner.
//   - heartbeat.go: per-node TTL timers and the disconnected/down rule.
//
// The scheduler itself lives in package scheduler and never imports this
// one; time is injected through Clock so tests can drive timers.
package nomad
