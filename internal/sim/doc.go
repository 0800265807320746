// Package sim runs many simulated client nodes in one process against real
// servers, for fleet-scale tests and benchmarks (`nomad operator sim`).
//
// Each simulated node is a real client.Client — registration, heartbeats
// at the TTL the servers return, the blocking allocation watch, the
// batched Node.UpdateAlloc pushes and the heal path after an outage are
// the client's own code — with three things swapped for what one process
// can afford a thousand times over: an in-memory state database, a fixed
// host fingerprint (each node's size comes from the simulator's flags),
// and the mock driver, whose tasks are timers, wrapped to count task
// starts and stops. Nodes share a few connection pools instead of holding
// a session each. A node told to go silent fails every call as a dead
// link does, so its client keeps its allocations running and heals as a
// real one would.
package sim
