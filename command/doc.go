// Package command is the nomad CLI: one file per command (job_run.go,
// alloc_status.go, ...), each a cli.Command with upstream's name, flags and
// output columns, talking to an agent through the api package.
//
// Shared pieces: Meta (the -address, -region and -namespace flags and the
// API client every command uses), the table and time formatting in
// format.go, short-ID prefix resolution in resolve.go, and the evaluation
// monitor (monitor.go) that `job run` and `job stop` follow.
//
// The agent itself (`nomad agent`) lives in the agent subpackage.
package command
