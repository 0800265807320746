// Package harness is what every end-to-end suite under e2e/ stands on: the
// real binary, built once per test binary by Main (and, for an agent
// whose wall clock a test steps, once more with the faultclock tag:
// FaultClockBin, Agent.SetClockOffset); agents as separate
// processes (Agents, Agent) that a test starts, stops, kills and starts
// again, whose logs are kept when it fails, and beside them programs that
// are not ours (AgentConfig.Program, the reference binaries by Tool, such
// as the Nomad Autoscaler) run the same way; free ports; a private network
// of namespaces on a bridge (Fabric) whose links fail in the ways a field
// network does (Fault: LinkDown, SilentDrop, Degraded; Isolate and
// DropFrom between members, clients seeing both sides); the task processes
// the agents start, found by their environment and killed at the end of
// the test with their cgroups; and Hold, the converse of wait.Poll, for
// promises about what does not happen.
//
// It owns processes, namespaces and the process table, nothing of the
// product: it talks to agents only as an operator does (the binary, its
// flags and config files, the HTTP API through the official Go client).
// What a suite asserts stays in the suite; a second suite that needs the
// same process, network or cleanup code extends this package instead of
// copying it.
package harness
