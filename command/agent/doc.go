// Package agent is the agent process behind `nomad agent`: its
// configuration, the wiring of the in-process server and client, and the
// /v1 HTTP API in front of them.
//
// What it owns:
//   - The agent configuration, in upstream's HCL and JSON keys. It is parsed
//     strictly (an unknown or unhonoured key is an error with
//     file:line:column), merged file by file and then with the flags, and
//     checked as a whole before anything starts; internal/audit's key walk
//     keeps every accepted key read by something.
//   - The agent's lifecycle: it starts the server, then the HTTP listener,
//     then the client (handed the in-process server as its RPC handler in
//     dev mode), and stops them in reverse. A -dev agent also stops its
//     tasks and removes its temporary data directory.
//   - The HTTP API. Each handler turns one request into one RPC and writes
//     its reply; answers are written in one place and errors become status
//     codes in one place, so the structured error body and the codes are
//     the same on every route. Bodies are decoded strictly, lists share one
//     filter and pagination path, and wire shapes that only upstream's
//     clients need (legacy resources, empty secrets) are added here, at the
//     edge, not in the model.
//   - The conversion of wire jobs (package api) to the server's model.
//
// Which way it calls: down into the server (package nomad) and the client
// through their exported APIs and RPC; never the other way. The commands
// above reach it only over HTTP. The agenttest subpackage starts dev agents
// for tests.
package agent
