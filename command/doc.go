// Package command is the nomad CLI. Each command keeps upstream's name,
// flags, output columns and exit codes, because operators script against
// them.
//
// Which way it calls: commands reach an agent only through the HTTP API,
// with the api package; they never import the server, the client or the
// scheduler, so what the CLI shows is exactly what any other API user can
// see. Flags shared by every command (-address, -region, -namespace, the
// token and TLS settings) and the API client built from them live in one
// place, Meta; short-ID prefixes, tables and times are resolved and
// formatted one way for all commands, and every command that waits for an
// evaluation or a deployment follows it with the one monitor.
//
// The agent process itself (`nomad agent`) is the agent subpackage, which
// sits below the commands: it wires a server and a client and serves the
// HTTP API the commands speak to.
package command
