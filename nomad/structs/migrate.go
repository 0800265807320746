package structs

import "time"

// Upstream's migrate defaults, which the official client's Canonicalize
// fills in.
const (
	MigrateDefaultMaxParallel     = 1
	MigrateDefaultHealthCheck     = "checks"
	MigrateDefaultMinHealthyTime  = 10 * time.Second
	MigrateDefaultHealthyDeadline = 5 * time.Minute
)

// MigrateStrategy is a group's `migrate` block: how many of its
// allocations a drain moves at a time. Zero values mean upstream's
// defaults.
type MigrateStrategy struct {
	MaxParallel     int
	HealthCheck     string
	MinHealthyTime  time.Duration
	HealthyDeadline time.Duration
}

// Copy returns a copy.
func (m *MigrateStrategy) Copy() *MigrateStrategy {
	if m == nil {
		return nil
	}
	c := *m
	return &c
}

// DrainMaxParallel is how many of the group's allocations a drain moves at
// a time: the migrate block's max_parallel, 1 by default.
func (tg *TaskGroup) DrainMaxParallel() int {
	if tg == nil || tg.Migrate == nil || tg.Migrate.MaxParallel <= 0 {
		return MigrateDefaultMaxParallel
	}
	return tg.Migrate.MaxParallel
}

// validate accepts what the drainer honours: max_parallel, and a health
// check judged on task states ("checks" without services is judged that
// way upstream too). A drain here counts an allocation as moved once its
// replacement runs, so a min_healthy_time or healthy_deadline other than
// the default would be ignored: they are refused by name.
func (m *MigrateStrategy) validate() problems {
	var p problems
	if m == nil {
		return p
	}
	if m.MaxParallel < 0 {
		p.add("migrate: max_parallel must not be negative (got %d)", m.MaxParallel)
	}
	switch m.HealthCheck {
	case "", "checks", "task_states":
	default:
		p.add("migrate: health_check must be \"checks\" or \"task_states\" (got %q)", m.HealthCheck)
	}
	if m.MinHealthyTime != 0 && m.MinHealthyTime != MigrateDefaultMinHealthyTime {
		p.add("migrate: min_healthy_time %v is not supported: a drain counts an allocation as moved once its replacement runs; leave the default (10s)", m.MinHealthyTime)
	}
	if m.HealthyDeadline != 0 && m.HealthyDeadline != MigrateDefaultHealthyDeadline {
		p.add("migrate: healthy_deadline %v is not supported: a drain counts an allocation as moved once its replacement runs; leave the default (5m)", m.HealthyDeadline)
	}
	return p
}
