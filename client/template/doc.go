// Package template renders a task's `template` blocks: Go's text/template
// with upstream's Nomad functions (nomadVar, nomadVarList,
// nomadVarExists, nomadService, nomadServices), env, file and a few
// string and encoding helpers. It owns rendering and knowing what a render
// read; it does no I/O of its own beyond file() under the task's
// directory. Data comes through a Source (the client's RPCs with the
// task's identity, or a fake), and Watch waits, with blocking queries on
// the same Source, for any read to change. It imports only nomad/structs.
//
// Consul and Vault functions (key, service, secret...) are defined so
// that using one fails with an error naming it, rather than text/template's
// "function not defined".
package template
