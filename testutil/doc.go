// Package testutil runs servers and clients in one test process, so that
// partitions are data in a test, not sleeps. NewMemCluster runs them on an
// in-memory network (MemNet) under testing/synctest, on fake time and
// upstream's timings: the harness for any scenario that can run there.
// StartServers runs production servers on loopback sockets, raft on disk
// and the wall clock, for what a bubble cannot hold (restarts on a data
// dir, serf snapshots, TLS on real sockets).
//
// Both fail links in one vocabulary (package testutil/fault): a fault.Mode
// (Reset or Blackhole) applied to a host's links (Net.Isolate, Net.Heal)
// or to one client's link to the servers (Links[i], a FaultableRPC).
//
// It may import the server (nomad) and the client; neither imports it.
package testutil
