// Package structs is the internal model shared by the servers, the scheduler
// and the clients: jobs, nodes, allocations, evaluations and plans, their
// status constants, validation, and the RPC and raft message types.
//
// It imports nothing from this module, so every other package can depend on
// it. The JSON field names of the types that leave the agent over HTTP match
// upstream Nomad's /v1 API; the same types travel over msgpack RPC and in the
// raft log.
//
// Objects returned from the state store are shared and immutable: callers
// Copy before they change anything.
package structs
