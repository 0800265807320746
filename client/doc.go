// Package client is the client agent: it makes this machine a node of the
// cluster and runs the allocations the servers place on it.
//
// It owns, each in its own file:
//   - fingerprinting the node (CPU, memory, disk, OS, drivers);
//   - registering the node and heartbeating at the TTL the server returns,
//     retrying with jittered backoff for as long as the link is down, and
//     re-registering when a server has forgotten the node;
//   - watching the node's allocations with a blocking query, pulling the
//     ones that changed and handing them to alloc runners (package
//     allocrunner): new ones are started, changed ones updated, ones the
//     servers garbage collected destroyed;
//   - batching the allocations' status changes into Node.UpdateAlloc calls,
//     queued and retried until delivered, never dropped;
//   - stopping the allocations of groups with stop_on_client_after once the
//     servers have not heard the node for that long;
//   - the local state database (package state), from which a restarted
//     client re-attaches to the tasks it left running;
//   - persisting the last successful heartbeat, from which a client
//     restarted while cut off knows how long its groups' disconnect
//     windows have left, and so which dead tasks it may restart before a
//     server answers (offline_restart.go; "Offline reboot" in
//     docs/concepts/disconnected-clients.md).
//
// It never imports the server, the state store or the scheduler
// (internal/audit checks it): it runs where the servers do not, and
// everything the client asks of the servers goes through one RPCHandler,
// so the agent can hand it the in-process server in dev mode or a
// connection pool, and tests a fake; every call carries the client's
// context, which Shutdown ends, so no call outlives the client.
// Fingerprints are taken before the node's lock, never under it. Shutdown
// stops the client and leaves its tasks running: only the servers decide
// that a workload stops, except where a group's stop_on_client_after, or
// the end of the window in which it restarted an allocation offline, hands
// the client that decision while it is cut off from them.
package client
