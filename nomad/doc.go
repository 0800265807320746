// Package nomad is the server: it owns the replicated state, decides what
// the cluster should run, and is the only writer of that state.
//
// What it owns:
//   - The raft log and its FSM. Every change to the cluster is one raft
//     entry of a message type, applied deterministically on every server to
//     the go-memdb store of package state: time and randomness come from the
//     entry (the endpoint that writes it stamps them), never from the FSM.
//     One decision is one entry: a node's status and the evaluations it
//     causes, a plan's allocations and their job summaries, are committed
//     together or not at all. What an applied entry committed is published
//     to the event stream (package stream) on every server.
//   - The RPC endpoints. Each validates its request, checks the caller
//     (ACL token, or node secret for client RPCs; server-only methods
//     refuse clients), forwards writes to the leader, and either reads a
//     state snapshot (blocking queries wait on its watch sets) or writes
//     one raft entry. Endpoints never change state in memory directly.
//   - The leader's duties, started when this server wins an election and
//     stopped when it loses it: the eval broker and blocked evaluations
//     (kept disabled while the scheduler configuration in raft pauses the
//     broker; resuming rebuilds them from the state store),
//     the plan queue and its applier, heartbeat timers (a missed TTL makes
//     a node disconnected or down, by structs.StatusAfterMiss), the deployment
//     watcher, the drainer, the periodic dispatcher, site-outage
//     detection, the core garbage collector. Each duty rebuilds what it
//     needs from the state store when it starts, so a new leader carries
//     on where the old one stopped; none keeps a decision only in memory.
//     An operator's snapshot restore (SnapshotRestore) goes through raft's
//     Restore and then stops and starts the duties again, as a change of
//     leader would. Our own persist stream is the only one raft sees:
//     persistStream is where another format's records are to be turned
//     into it.
//   - Variables and the keyring. The leader encrypts a variable's items
//     with the active root key before its write goes through raft, and a
//     server decrypts on read: the raft log, snapshots and the state store
//     hold only ciphertext. Root keys' metadata is in raft, their material
//     never: each server keeps keys in its keystore and copies the ones it
//     lacks from another server (Keyring.Get, servers only). Lock TTLs run
//     on the leader's clock; the release of an expired lock, with its lock
//     delay, is a raft entry. Workload identities are signed with keys the
//     root keys derive and resolve, as tokens, to an implicit policy.
//   - Scheduling workers, on every server: they dequeue evaluations from
//     the leader's broker, run package scheduler over a snapshot, and act
//     as its Planner, submitting plans to the leader's plan queue. The
//     plan applier, alone, checks each plan against the latest state (a
//     node that is not ready takes no placement) and commits it.
//
// Which way it calls: the server imports the model (nomad/structs), the
// state store, the event stream, the scheduler and the helpers; nothing it
// imports imports it back, and it never imports the client, the drivers
// or the command packages (internal/audit checks the direction). The
// scheduler is handed a read-only snapshot and a Planner and never sees
// the server. Clients reach it only over RPC. Time reaches it through the
// injected Clock, so tests drive TTLs and windows on a fake one.
//
// The disconnected-clients rules this package implements are those of
// docs/concepts/disconnected-clients.md, "Heartbeats and node status",
// "Reconnect" and "Site outages".
package nomad
