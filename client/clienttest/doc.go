// Package clienttest holds test helpers for the client: a fake of the
// servers' side of the client RPCs (the process boundary the client talks
// across) and factories for mock_driver allocations. Only tests import it.
//
// The fake is held to the real server by testutil's contract suite
// (TestFakeServerContract); a behaviour the client's tests rely on belongs
// there as a step, run against both. Its link fails in the fault
// vocabulary of testutil/fault; it imports nothing of the server.
package clienttest
