// Package api is the Go client for the agent's /v1 HTTP API and the wire
// types that API speaks.
//
// It owns two things and nothing else:
//
//   - The wire types (Job, TaskGroup, Task, Allocation, Node, Evaluation, ...)
//     whose JSON shapes match upstream Nomad's /v1 API field for field, so
//     that the official github.com/hashicorp/nomad/api client can drive our
//     agents and this client can decode what any agent returns. Fields are
//     pointers wherever upstream uses pointers, because "unset" must stay
//     distinguishable from the zero value until Canonicalize (or the server)
//     fills in defaults.
//   - A small HTTP client (Client, with one handle per endpoint family, e.g.
//     c.Jobs().Register) that speaks the upstream conventions: the index, wait,
//     prefix and namespace query parameters, the X-Nomad-Index header, and
//     non-2xx answers surfaced as *UnexpectedResponseError.
//
// The package deliberately holds no business logic: validation lives in the
// server's structs package, HCL parsing in jobspec, and presentation in the
// CLI. The only rules here are the client-side defaults (Canonicalize) that
// upstream's client applies too, because the job a user sees from
// `job inspect` or `/v1/jobs/parse?canonicalize=true` must match. It
// imports nothing of this module, as upstream's api module stands alone,
// so tools can use it without the agent (internal/audit checks it).
package api
