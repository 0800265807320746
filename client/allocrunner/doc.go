// Package allocrunner runs allocations on a client: one AllocRunner per
// allocation, one TaskRunner per task, all as goroutines inside the client
// process (no helper process per task, so a small edge node can hold a
// thousand allocations).
//
// An AllocRunner builds the allocation's directory, runs its tasks in the
// order their lifecycle blocks give (a coordinator opens each stage's gate
// from the tasks' states; task runners wait on it before every start),
// derives the allocation's client status from their states, applies the
// group's leader, failure and sidecar semantics, and hands every change to
// a StateUpdater (the client's update batcher). A TaskRunner starts its task through a driver, waits for
// it, restarts it according to the restart policy (RestartTracker), kills it
// with its kill_signal and kill_timeout when told to, and persists its handle
// and state so that a restarted client re-attaches instead of starting it
// again. A restored task that did not survive the restart starts again only
// through the allocation's offlineGate: once the servers answer, or before
// that within the group's disconnect window.
//
// Before a start, a TaskRunner gets the task's workload identity signed
// through an IdentitySigner (identity_hook.go) and renders its templates
// (template_hook.go, rendering in client/template) from a TemplateSources
// it is given; it never calls the servers itself.
//
// An allocation whose group network is in bridge mode gets its network
// namespace from a NetworkManager (client/allocnet) before its first task
// starts, and gives it back once its tasks are all dead or it is
// destroyed; tasks are handed the namespace's path and drivers that
// cannot join it fail the allocation by name (network_hook.go).
//
// Shutdown and Destroy differ on purpose: Shutdown stops the goroutines and
// leaves every task running (an agent restart must not touch workloads);
// Destroy kills the tasks and removes the allocation's directory and records.
package allocrunner
