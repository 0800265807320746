// Package testutil runs servers and clients in one test process, every
// client talking to the servers through a FaultableRPC that a test can cut
// and heal, so partitions are data in a test, not sleeps. NewMemCluster
// runs the servers and clients on an in-memory network (MemNet) under
// testing/synctest, on fake time; StartServers and NewCluster run on real
// sockets and the wall clock.
package testutil
