// Package jobspec turns HCL2 job files into *api.Job.
//
// It accepts upstream Nomad's job file syntax for the blocks this project
// implements (job, group, task, constraint, affinity, restart, reschedule,
// ephemeral_disk, disconnect, update, scaling, resources, config, env, meta, artifact,
// lifecycle, service, check, check_restart, volume, volume_mount) and rejects
// everything else. The rejection is the point: an operator who copies a job
// file with a `csi_plugin` block, a CSI volume, or a service with provider =
// "consul", from an upstream cluster must be told, with file:line:column, that the block does nothing here, rather
// than find out in production that it was silently dropped.
//
// Evaluation happens at parse time, in two steps as upstream: the
// variable, variables and locals blocks first (values from defaults,
// NOMAD_VAR_ environment variables, var files and -var flags, in that
// precedence), then the job block with var.*, local.*, upstream's
// functions and dynamic blocks. "${...}" references whose root is none
// of those (attr.*, meta.*, node.*, NOMAD_*) are kept verbatim for the
// client to interpolate on the node, as upstream does.
//
// Parse reports every problem at once, as a *ParseError whose Diagnostics
// carry exact source ranges. It does not fill in defaults or validate
// values (a negative count parses fine): api.Job.Canonicalize and the
// server's validation do that, so that jobs submitted as JSON get exactly
// the same treatment as jobs submitted as HCL.
//
// It imports only the wire types (package api) and the helpers; the
// server converts the wire job to its model, never this package.
package jobspec
