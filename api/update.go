package api

import "time"

// UpdateStrategy is the `update` block (upstream's shape): how a new job
// version replaces the old one, max_parallel allocations at a time, with
// optional canaries.
type UpdateStrategy struct {
	Stagger          *time.Duration
	MaxParallel      *int
	HealthCheck      *string
	MinHealthyTime   *time.Duration
	HealthyDeadline  *time.Duration
	ProgressDeadline *time.Duration
	AutoRevert       *bool
	AutoPromote      *bool
	Canary           *int
}

// DefaultUpdateStrategy is upstream's default update block.
func DefaultUpdateStrategy() *UpdateStrategy {
	return &UpdateStrategy{
		Stagger:          new(30 * time.Second),
		MaxParallel:      new(1),
		HealthCheck:      new("checks"),
		MinHealthyTime:   new(10 * time.Second),
		HealthyDeadline:  new(5 * time.Minute),
		ProgressDeadline: new(10 * time.Minute),
		AutoRevert:       new(false),
		AutoPromote:      new(false),
		Canary:           new(0),
	}
}

// Copy returns a deep copy (nil for nil).
func (u *UpdateStrategy) Copy() *UpdateStrategy {
	if u == nil {
		return nil
	}
	return &UpdateStrategy{
		Stagger: clonePtr(u.Stagger), MaxParallel: clonePtr(u.MaxParallel), HealthCheck: clonePtr(u.HealthCheck),
		MinHealthyTime: clonePtr(u.MinHealthyTime), HealthyDeadline: clonePtr(u.HealthyDeadline),
		ProgressDeadline: clonePtr(u.ProgressDeadline), AutoRevert: clonePtr(u.AutoRevert),
		AutoPromote: clonePtr(u.AutoPromote), Canary: clonePtr(u.Canary),
	}
}

// Merge overwrites u's fields with the ones set in o.
func (u *UpdateStrategy) Merge(o *UpdateStrategy) {
	if o == nil {
		return
	}
	set := func(dst **time.Duration, src *time.Duration) {
		if src != nil {
			*dst = clonePtr(src)
		}
	}
	set(&u.Stagger, o.Stagger)
	set(&u.MinHealthyTime, o.MinHealthyTime)
	set(&u.HealthyDeadline, o.HealthyDeadline)
	set(&u.ProgressDeadline, o.ProgressDeadline)
	if o.MaxParallel != nil {
		u.MaxParallel = clonePtr(o.MaxParallel)
	}
	if o.HealthCheck != nil {
		u.HealthCheck = clonePtr(o.HealthCheck)
	}
	if o.AutoRevert != nil {
		u.AutoRevert = clonePtr(o.AutoRevert)
	}
	if o.AutoPromote != nil {
		u.AutoPromote = clonePtr(o.AutoPromote)
	}
	if o.Canary != nil {
		u.Canary = clonePtr(o.Canary)
	}
}

// Canonicalize fills unset fields from DefaultUpdateStrategy.
func (u *UpdateStrategy) Canonicalize() {
	d := DefaultUpdateStrategy()
	d.Merge(u)
	*u = *d
}

// canonicalizeUpdate merges the job's update block under the group's, as
// upstream's client does: the group's fields win.
func (g *TaskGroup) canonicalizeUpdate(job *Job) {
	var ju *UpdateStrategy
	if job != nil {
		ju = job.Update
	}
	switch {
	case ju != nil && g.Update != nil:
		merged := ju.Copy()
		merged.Merge(g.Update)
		g.Update = merged
	case ju != nil:
		g.Update = ju.Copy()
	}
	if g.Update != nil {
		g.Update.Canonicalize()
	}
}
