package api

import "time"

// MigrateStrategy is a group's `migrate` block: how a drain moves its
// allocations off a node.
type MigrateStrategy struct {
	MaxParallel     *int           `hcl:"max_parallel,optional"`
	HealthCheck     *string        `hcl:"health_check,optional"`
	MinHealthyTime  *time.Duration `hcl:"min_healthy_time,optional"`
	HealthyDeadline *time.Duration `hcl:"healthy_deadline,optional"`
}
