// Package testutil runs servers and clients in one test process, every
// client talking to the servers through a FaultableRPC that a test can cut
// and heal, so partitions are data in a test, not sleeps.
package testutil
