// Package agenttest starts in-process dev agents (server and client in one
// process, on free loopback ports, with temporary directories) for tests
// that drive the HTTP API or the CLI, and holds the polling helper those
// tests use to wait on real time with a deadline.
package agenttest
