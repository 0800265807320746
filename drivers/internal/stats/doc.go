// Package stats turns what the kernel or an engine counts for a task
// (cumulative CPU time, memory now) into the drivers' ResourceUsage: CPU as
// a percentage of one core over the time since the previous sample of the
// same task, or over its whole life for the first one, so that a one-shot
// `alloc status -stats` shows something meaningful.
package stats
