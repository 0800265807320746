// Package e2e holds end-to-end suites that drive the real nomad binary as
// an operator would: separate processes, real ports, real tasks. Every
// suite stands on e2e/internal/harness (the binary, agent processes, the
// network fabric and its faults, task cleanup). Suites that need network
// namespaces to cut a client off skip, with a message, when they cannot
// create them.
package e2e
