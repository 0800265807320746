// Package checks runs the Nomad-native health checks of an allocation's
// services on the client: http, tcp and script checks, each on its own
// goroutine and timer of an injected clock, with their results kept in
// memory in upstream's shape (GET /v1/client/allocation/:id/checks).
//
// It knows nothing of alloc runners: the caller resolves each check's
// address (client/allocrunner's service address resolution) and gives a
// script check the function that runs a command in its task, and a
// check_restart the function that restarts the task. Results feed
// deployment health (Passing) and check_restart.
package checks
