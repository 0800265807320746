// Package state is the client's local database: what a client process must
// find again after it restarts, so that it re-attaches to the tasks it left
// running instead of starting them twice, whether or not it can reach a
// server.
//
// It stores the node's identity, the last successful heartbeat (Heartbeat,
// with the boot it happened in), every allocation the client runs, and per
// task the driver's TaskHandle (the key to RecoverTask) and the TaskState
// (restart count, events). StateDB is the contract; BoltStateDB keeps it in a
// bbolt file under the client's state dir and MemDB is an in-memory twin for
// tests.
//
// Writes are many and small (a task state changes with every event) and come
// from one goroutine per task. BoltStateDB therefore coalesces concurrent
// writes into one transaction and one fsync (bbolt's Batch), so a thousand
// allocations starting at once cost a handful of disk syncs rather than
// thousands. Every write is durable when it returns.
package state
