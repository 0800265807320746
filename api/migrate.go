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

// clone returns a copy of m whose pointers are its own.
func (m *MigrateStrategy) clone() *MigrateStrategy {
	return &MigrateStrategy{
		MaxParallel: clonePtr(m.MaxParallel), HealthCheck: clonePtr(m.HealthCheck),
		MinHealthyTime: clonePtr(m.MinHealthyTime), HealthyDeadline: clonePtr(m.HealthyDeadline),
	}
}

// merge overwrites m's fields with the ones set in o; a nil o is a no-op.
func (m *MigrateStrategy) merge(o *MigrateStrategy) {
	if o == nil {
		return
	}
	set(&m.MaxParallel, o.MaxParallel)
	set(&m.HealthCheck, o.HealthCheck)
	set(&m.MinHealthyTime, o.MinHealthyTime)
	set(&m.HealthyDeadline, o.HealthyDeadline)
}
