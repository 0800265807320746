// Package agent is the agent process behind `nomad agent`: its HCL
// configuration, the wiring of the in-process server and client, and the
// /v1 HTTP API in front of them.
//
// It owns:
//   - the agent config (config.go) in upstream's HCL keys, parsed strictly
//     (config_parse.go: an unknown key is an error with file:line:column)
//     and merged file by file, then with the flags (command.go);
//   - the Agent (agent.go), which starts the server, the HTTP listener and
//     the client with the server as its RPC handler, and stops them in
//     reverse; a -dev agent also kills its tasks and removes its temporary
//     data directory;
//   - the HTTP API (http.go and the *_endpoint.go files): each handler turns
//     a request into one RPC and returns the reply or an error; wrap is the
//     only place answers are written and errorStatus the only place errors
//     become status codes. Request bodies are decoded strictly (decode.go);
//   - the conversion of wire jobs to the server's model (job_convert.go).
//
// The agenttest subpackage starts dev agents for tests.
package agent
