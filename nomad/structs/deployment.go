package structs

import (
	"fmt"
	"slices"
	"time"
)

// Health check modes of an update block (upstream's strings).
const (
	UpdateHealthCheckTaskStates = "task_states"
	UpdateHealthCheckChecks     = "checks"
	UpdateHealthCheckManual     = "manual"
)

// UpdateStrategy is the `update` block: how a new version of a group
// replaces the old one. MaxParallel 0 means "no deployment": every
// destructive update happens at once, as before the block existed.
type UpdateStrategy struct {
	Stagger          time.Duration
	MaxParallel      int
	HealthCheck      string
	MinHealthyTime   time.Duration
	HealthyDeadline  time.Duration
	ProgressDeadline time.Duration
	AutoRevert       bool
	AutoPromote      bool
	Canary           int
}

// DefaultUpdateStrategy is upstream's default update block of service jobs.
func DefaultUpdateStrategy() *UpdateStrategy {
	return &UpdateStrategy{
		Stagger:          30 * time.Second,
		MaxParallel:      1,
		HealthCheck:      UpdateHealthCheckChecks,
		MinHealthyTime:   10 * time.Second,
		HealthyDeadline:  5 * time.Minute,
		ProgressDeadline: 10 * time.Minute,
	}
}

// Copy returns a copy (nil for nil).
func (u *UpdateStrategy) Copy() *UpdateStrategy {
	if u == nil {
		return nil
	}
	c := *u
	return &c
}

// Rolling reports whether the block asks for a deployment at all.
func (u *UpdateStrategy) Rolling() bool { return u != nil && u.MaxParallel > 0 }

func (u *UpdateStrategy) validate() []string {
	if u == nil {
		return nil
	}
	var p problems
	switch u.HealthCheck {
	case UpdateHealthCheckTaskStates, UpdateHealthCheckManual, "":
	case UpdateHealthCheckChecks:
		// Without services a group has no checks, so "checks" is judged by
		// task states exactly as upstream judges a group without checks;
		// it is what upstream's client fills in by default.
	default:
		p.add("update: Invalid health_check %q: must be one of task_states, checks, manual", u.HealthCheck)
	}
	if u.MaxParallel < 0 {
		p.add("update: max_parallel can't be negative")
	}
	if u.Canary < 0 {
		p.add("update: canary can't be negative")
	}
	if u.Canary > 0 && u.MaxParallel == 0 {
		p.add("update: canary needs max_parallel greater than 0")
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"stagger", u.Stagger}, {"min_healthy_time", u.MinHealthyTime}, {"healthy_deadline", u.HealthyDeadline}, {"progress_deadline", u.ProgressDeadline}} {
		if d.v < 0 {
			p.add("update: %s can't be negative", d.name)
		}
	}
	if u.MaxParallel > 0 && u.HealthyDeadline > 0 && u.MinHealthyTime >= u.HealthyDeadline {
		p.add("update: min_healthy_time (%s) must be less than healthy_deadline (%s)", u.MinHealthyTime, u.HealthyDeadline)
	}
	if u.MaxParallel > 0 && u.ProgressDeadline != 0 && u.HealthyDeadline > u.ProgressDeadline {
		p.add("update: healthy_deadline (%s) must be no more than progress_deadline (%s)", u.HealthyDeadline, u.ProgressDeadline)
	}
	return p
}

// validateService refuses a service job's stagger other than the default
// the official client fills in: upstream ignores it there (deprecated), a
// rollout's pace being max_parallel and each allocation's health, so any
// other value would be accepted without effect.
func (u *UpdateStrategy) validateService() []string {
	if u == nil {
		return nil
	}
	var p problems
	if def := DefaultUpdateStrategy().Stagger; u.Stagger != 0 && u.Stagger != def {
		p.add("update: stagger %v has no effect on service jobs, whose rollout is paced by max_parallel and each allocation's health; leave it unset or at the default (%v)", u.Stagger, def)
	}
	return p
}

// validateSystem refuses, by name, what a system job's update block may
// not set: a system job rolls without a deployment, by max_parallel
// destructive updates per evaluation and stagger between the batches, so
// canaries, promotion, reverts and health deadlines would be accepted
// without effect. The defaults the official client fills in are accepted.
func (u *UpdateStrategy) validateSystem() []string {
	if u == nil {
		return nil
	}
	var p problems
	const why = "system jobs roll by max_parallel and stagger alone, without a deployment"
	if u.Canary != 0 {
		p.add("update: canary is not supported for system jobs: %s", why)
	}
	if u.AutoRevert {
		p.add("update: auto_revert is not supported for system jobs: %s", why)
	}
	if u.AutoPromote {
		p.add("update: auto_promote is not supported for system jobs: %s", why)
	}
	def := DefaultUpdateStrategy()
	if u.HealthCheck != "" && u.HealthCheck != def.HealthCheck {
		p.add("update: health_check %q is not supported for system jobs: %s; leave the default (%s)", u.HealthCheck, why, def.HealthCheck)
	}
	for _, d := range []struct {
		name    string
		v, dflt time.Duration
	}{
		{"min_healthy_time", u.MinHealthyTime, def.MinHealthyTime},
		{"healthy_deadline", u.HealthyDeadline, def.HealthyDeadline},
		{"progress_deadline", u.ProgressDeadline, def.ProgressDeadline},
	} {
		if d.v != 0 && d.v != d.dflt {
			p.add("update: %s %v is not supported for system jobs: %s; leave the default (%v)", d.name, d.v, why, d.dflt)
		}
	}
	return p
}

// Deployment statuses (upstream's strings).
const (
	DeploymentStatusRunning    = "running"
	DeploymentStatusPaused     = "paused"
	DeploymentStatusFailed     = "failed"
	DeploymentStatusSuccessful = "successful"
	DeploymentStatusCancelled  = "cancelled"
)

// Deployment status descriptions (upstream's texts).
const (
	DeploymentStatusDescriptionRunning               = "Deployment is running"
	DeploymentStatusDescriptionRunningNeedsPromotion = "Deployment is running but requires manual promotion"
	DeploymentStatusDescriptionRunningAutoPromotion  = "Deployment is running pending automatic promotion"
	DeploymentStatusDescriptionPaused                = "Deployment is paused"
	DeploymentStatusDescriptionSuccessful            = "Deployment completed successfully"
	DeploymentStatusDescriptionStoppedJob            = "Cancelled because job is stopped"
	DeploymentStatusDescriptionNewerJob              = "Cancelled due to newer version of job"
	DeploymentStatusDescriptionFailedAllocations     = "Failed due to unhealthy allocations"
	DeploymentStatusDescriptionProgressDeadline      = "Failed due to progress deadline"
	DeploymentStatusDescriptionFailedByUser          = "Deployment marked as failed"
)

// DeploymentStatusDescriptionRollback appends the version a failed
// deployment rolls back to.
func DeploymentStatusDescriptionRollback(desc string, version uint64) string {
	return fmt.Sprintf("%s - rolling back to job version %d", desc, version)
}

// DeploymentStatusDescriptionNoRollbackTarget says why a failed
// deployment with auto_revert did not roll back.
func DeploymentStatusDescriptionNoRollbackTarget(desc string) string {
	return desc + " - no stable job version to auto revert to"
}

// Deployment tracks the rollout of one job version.
type Deployment struct {
	ID                 string
	Namespace          string
	JobID              string
	JobVersion         uint64
	JobModifyIndex     uint64
	JobSpecModifyIndex uint64
	JobCreateIndex     uint64
	IsMultiregion      bool
	TaskGroups         map[string]*DeploymentState
	Status             string
	StatusDescription  string
	EvalPriority       int
	CreateIndex        uint64
	ModifyIndex        uint64
	CreateTime         int64
	ModifyTime         int64
}

// DeploymentState is one group's progress in a deployment.
type DeploymentState struct {
	AutoRevert        bool
	AutoPromote       bool
	ProgressDeadline  time.Duration
	RequireProgressBy time.Time
	Promoted          bool
	PlacedCanaries    []string
	DesiredCanaries   int
	DesiredTotal      int
	PlacedAllocs      int
	HealthyAllocs     int
	UnhealthyAllocs   int
}

// NewDeployment starts a deployment of job; now stamps it.
func NewDeployment(job *Job, evalPriority int, now time.Time) *Deployment {
	return &Deployment{
		ID:                 GenerateUUID(),
		Namespace:          job.Namespace,
		JobID:              job.ID,
		JobVersion:         job.Version,
		JobModifyIndex:     job.ModifyIndex,
		JobSpecModifyIndex: job.JobModifyIndex,
		JobCreateIndex:     job.CreateIndex,
		TaskGroups:         map[string]*DeploymentState{},
		Status:             DeploymentStatusRunning,
		StatusDescription:  DeploymentStatusDescriptionRunning,
		EvalPriority:       evalPriority,
		CreateTime:         now.UnixNano(),
		ModifyTime:         now.UnixNano(),
	}
}

// Active reports whether the deployment may still progress.
func (d *Deployment) Active() bool {
	return d != nil && (d.Status == DeploymentStatusRunning || d.Status == DeploymentStatusPaused)
}

// RequiresPromotion reports whether a group waits for its canaries to be
// promoted.
func (d *Deployment) RequiresPromotion() bool {
	if d == nil {
		return false
	}
	for _, s := range d.TaskGroups {
		if s.DesiredCanaries > 0 && !s.Promoted {
			return true
		}
	}
	return false
}

// HasAutoPromote reports whether every group with canaries promotes itself.
func (d *Deployment) HasAutoPromote() bool {
	if d == nil {
		return false
	}
	any := false
	for _, s := range d.TaskGroups {
		if s.DesiredCanaries > 0 {
			if !s.AutoPromote {
				return false
			}
			any = true
		}
	}
	return any
}

// Copy returns a deep copy.
func (d *Deployment) Copy() *Deployment {
	if d == nil {
		return nil
	}
	c := *d
	c.TaskGroups = make(map[string]*DeploymentState, len(d.TaskGroups))
	for k, s := range d.TaskGroups {
		c.TaskGroups[k] = s.Copy()
	}
	return &c
}

// Copy returns a deep copy.
func (s *DeploymentState) Copy() *DeploymentState {
	if s == nil {
		return nil
	}
	c := *s
	c.PlacedCanaries = slices.Clone(s.PlacedCanaries)
	return &c
}

// DeploymentStatusUpdate changes a deployment's status.
type DeploymentStatusUpdate struct {
	DeploymentID      string
	Status            string
	StatusDescription string
}

// AllocDeploymentStatus is an allocation's health in its deployment, as the
// client (or an operator, for manual health checks) reported it.
type AllocDeploymentStatus struct {
	// Healthy is nil until the health is known.
	Healthy     *bool
	Timestamp   time.Time
	Canary      bool
	ModifyIndex uint64
}

// HasHealth reports whether the health is known.
func (s *AllocDeploymentStatus) HasHealth() bool { return s != nil && s.Healthy != nil }

// IsHealthy reports a known good health.
func (s *AllocDeploymentStatus) IsHealthy() bool { return s.HasHealth() && *s.Healthy }

// IsUnhealthy reports a known bad health.
func (s *AllocDeploymentStatus) IsUnhealthy() bool { return s.HasHealth() && !*s.Healthy }

// IsCanary reports whether the allocation is a canary.
func (s *AllocDeploymentStatus) IsCanary() bool { return s != nil && s.Canary }

// Copy returns a copy (nil for nil).
func (s *AllocDeploymentStatus) Copy() *AllocDeploymentStatus {
	if s == nil {
		return nil
	}
	c := *s
	c.Healthy = copyPtr(s.Healthy)
	return &c
}
