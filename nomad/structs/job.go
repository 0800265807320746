package structs

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Job types.
const (
	JobTypeService  = "service"
	JobTypeBatch    = "batch"
	JobTypeSystem   = "system"
	JobTypeSysBatch = "sysbatch"
	JobTypeCore     = "_core"
)

// Job statuses.
const (
	JobStatusPending = "pending"
	JobStatusRunning = "running"
	JobStatusDead    = "dead"
)

// Defaults applied to jobs submitted without them.
const (
	DefaultNamespace   = "default"
	DefaultRegion      = "global"
	DefaultNodePool    = "default"
	JobDefaultPriority = 50
	JobMinPriority     = 1
	JobMaxPriority     = 100

	// JobTrackedVersions is how many versions of a job the servers keep
	// for `job history` and `job revert`, as upstream.
	JobTrackedVersions = 6
)

// Job is the unit of work a user submits: a set of task groups and the
// constraints on where they run.
type Job struct {
	ID          string
	Name        string
	Namespace   string
	Region      string
	Type        string
	Priority    int
	AllAtOnce   bool
	Datacenters []string
	NodePool    string
	Constraints []*Constraint
	Affinities  []*Affinity
	Spreads     []*Spread
	TaskGroups  []*TaskGroup
	Meta        map[string]string
	ParentID    string
	// Update is the job-level update block; groups without their own
	// inherit it (Canonicalize).
	Update *UpdateStrategy

	// Periodic and ParameterizedJob make the job a template that never
	// runs itself (see IsParent); Dispatched and Payload mark and feed a
	// child made by `job dispatch`.
	Periodic         *PeriodicConfig
	ParameterizedJob *ParameterizedJobConfig
	Dispatched       bool
	Payload          []byte

	// Stop marks a job stopped by the user; its allocations are stopped but
	// the job stays until purged or garbage collected.
	Stop bool

	Status            string
	StatusDescription string
	Stable            bool
	Version           uint64
	SubmitTime        int64

	CreateIndex    uint64
	ModifyIndex    uint64
	JobModifyIndex uint64
}

// NamespacedID identifies an object within a namespace.
type NamespacedID struct {
	ID        string
	Namespace string
}

func (n NamespacedID) String() string { return n.Namespace + "/" + n.ID }

// NamespacedID returns the job's key.
func (j *Job) NamespacedID() NamespacedID { return NamespacedID{ID: j.ID, Namespace: j.Namespace} }

// LookupTaskGroup returns the named group, or nil.
func (j *Job) LookupTaskGroup(name string) *TaskGroup {
	if j == nil {
		return nil
	}
	for _, tg := range j.TaskGroups {
		if tg.Name == name {
			return tg
		}
	}
	return nil
}

// Stopped reports whether the job should have no running allocations:
// stopped by the user, or a periodic or parameterized template, whose
// children run in its place. The schedulers place nothing for such a job
// whatever evaluation reaches them.
func (j *Job) Stopped() bool { return j == nil || j.Stop || j.IsParent() }

// Canonicalize fills defaults for fields the user left empty. It is
// idempotent and called before validation.
func (j *Job) Canonicalize() {
	if j == nil {
		return
	}
	if j.Namespace == "" {
		j.Namespace = DefaultNamespace
	}
	if j.Region == "" {
		j.Region = DefaultRegion
	}
	if j.Name == "" {
		j.Name = j.ID
	}
	if j.Type == "" {
		j.Type = JobTypeService
	}
	if j.Priority == 0 {
		j.Priority = JobDefaultPriority
	}
	if j.NodePool == "" {
		j.NodePool = DefaultNodePool
	}
	if len(j.Datacenters) == 0 {
		j.Datacenters = []string{"*"}
	}
	// Every type keeps its update block: service jobs deploy by it, system
	// jobs roll by its max_parallel and stagger, and on batch and sysbatch
	// jobs validation refuses it, as upstream does.
	j.Periodic.Canonicalize()
	j.ParameterizedJob.Canonicalize()
	for _, tg := range j.TaskGroups {
		tg.Canonicalize(j)
	}
}

// Validate returns every problem with the job at once.
func (j *Job) Validate() error {
	var p problems
	// A job ID or name may hold anything upstream's may ("/", tabs,
	// any Unicode: the API escapes them in paths) but a space (ID only)
	// or a NUL. Upstream sets no length limit; 128 characters bound what
	// every allocation name and index entry of the job repeats.
	if j.ID == "" {
		p.add("Missing job ID")
	} else if utf8.RuneCountInString(j.ID) > MaxJobIDLength {
		p.add("Job ID must be no more than %d characters", MaxJobIDLength)
	} else if strings.ContainsRune(j.ID, 0) {
		p.add("Job ID %q must not contain a NUL character", j.ID)
	} else if strings.Contains(j.ID, " ") {
		p.add("Job ID %q must not contain a space", j.ID)
	}
	if j.Name == "" {
		p.add("Missing job name")
	} else if strings.ContainsRune(j.Name, 0) {
		p.add("Job name %q must not contain a NUL character", j.Name)
	}
	switch j.Type {
	case JobTypeService, JobTypeBatch, JobTypeSystem, JobTypeSysBatch:
	case "":
		p.add("Missing job type")
	default:
		p.add("Invalid job type %q: must be one of service, batch, system, sysbatch", j.Type)
	}
	if j.Priority < JobMinPriority || j.Priority > JobMaxPriority {
		p.add("Job priority must be between [%d, %d]", JobMinPriority, JobMaxPriority)
	}
	if len(j.Datacenters) == 0 {
		p.add("Missing job datacenters")
	}
	for i, c := range j.Constraints {
		if err := c.Validate(); err != nil {
			p.addErr(fmt.Sprintf("Constraint %d validation failed: ", i+1), err)
		}
	}
	for i, a := range j.Affinities {
		if err := a.Validate(); err != nil {
			p.addErr(fmt.Sprintf("Affinity %d validation failed: ", i+1), err)
		}
	}
	for i, sp := range j.Spreads {
		if err := sp.Validate(); err != nil {
			p.addErr(fmt.Sprintf("Spread %d validation failed: ", i+1), err)
		}
	}
	p = append(p, j.validateParent()...)
	if len(j.TaskGroups) == 0 {
		p.add("Missing job task groups")
	}
	seen := map[string]bool{}
	for i, tg := range j.TaskGroups {
		if tg.Name == "" {
			p.add("Job task group %d missing name", i+1)
		} else if seen[tg.Name] {
			p.add("Job task group %d redefines '%s' from group %d", i+1, tg.Name, slices.IndexFunc(j.TaskGroups, func(g *TaskGroup) bool { return g.Name == tg.Name })+1)
		} else if msg := nameProblem("Task group name", tg.Name); msg != "" {
			p.add("%s", msg)
		}
		seen[tg.Name] = true
		for _, msg := range tg.validate(j) {
			p.add("Task group %s validation failed: %s", tg.Name, msg)
		}
	}
	return p.err()
}

// Copy returns a deep copy.
func (j *Job) Copy() *Job {
	if j == nil {
		return nil
	}
	n := *j
	n.Datacenters = slices.Clone(j.Datacenters)
	n.Constraints = copyConstraints(j.Constraints)
	n.Affinities = copyAffinities(j.Affinities)
	n.Spreads = copySpreads(j.Spreads)
	n.Meta = maps.Clone(j.Meta)
	n.Update = j.Update.Copy()
	n.Periodic = j.Periodic.Copy()
	n.ParameterizedJob = j.ParameterizedJob.Copy()
	n.Payload = slices.Clone(j.Payload)
	if j.TaskGroups != nil {
		n.TaskGroups = make([]*TaskGroup, len(j.TaskGroups))
		for i, tg := range j.TaskGroups {
			n.TaskGroups[i] = tg.Copy()
		}
	}
	return &n
}

// Stub returns the list form of the job.
func (j *Job) Stub(summary *JobSummary) *JobListStub {
	return &JobListStub{
		ID:                j.ID,
		ParentID:          j.ParentID,
		Name:              j.Name,
		Namespace:         j.Namespace,
		Datacenters:       j.Datacenters,
		NodePool:          j.NodePool,
		Type:              j.Type,
		Priority:          j.Priority,
		Periodic:          j.IsPeriodic(),
		ParameterizedJob:  j.IsParameterized(),
		Stop:              j.Stop,
		Status:            j.Status,
		StatusDescription: j.StatusDescription,
		JobSummary:        summary,
		CreateIndex:       j.CreateIndex,
		ModifyIndex:       j.ModifyIndex,
		JobModifyIndex:    j.JobModifyIndex,
		SubmitTime:        j.SubmitTime,
		Version:           j.Version,
		Meta:              j.Meta,
	}
}

// JobListStub is the list form of a job, as /v1/jobs returns it.
type JobListStub struct {
	ID                string
	ParentID          string
	Name              string
	Namespace         string
	Datacenters       []string
	NodePool          string
	Type              string
	Priority          int
	Periodic          bool
	ParameterizedJob  bool
	Stop              bool
	Status            string
	StatusDescription string
	JobSummary        *JobSummary
	CreateIndex       uint64
	ModifyIndex       uint64
	JobModifyIndex    uint64
	SubmitTime        int64
	Version           uint64
	Meta              map[string]string `json:",omitempty"`
}

// TaskGroup is a set of tasks placed together on one node, Count times.
type TaskGroup struct {
	Name             string
	Count            int
	Constraints      []*Constraint
	Affinities       []*Affinity
	Spreads          []*Spread
	Tasks            []*Task
	RestartPolicy    *RestartPolicy
	ReschedulePolicy *ReschedulePolicy
	EphemeralDisk    *EphemeralDisk
	Meta             map[string]string

	// MaxClientDisconnect is the legacy spelling of Disconnect.LostAfter:
	// how long an allocation on a disconnected node stays unknown before it
	// is considered lost. Nil or zero means the feature is off.
	MaxClientDisconnect *time.Duration

	// StopAfterClientDisconnect is the legacy spelling of
	// Disconnect.StopOnClientAfter.
	StopAfterClientDisconnect *time.Duration

	// Disconnect is the full disconnect block.
	Disconnect *DisconnectStrategy

	// Update is the group's update block (see UpdateStrategy).
	Update *UpdateStrategy
	// Networks is the group's `network` block (at most one).
	Networks []*NetworkResource

	// Migrate is the group's migrate block (see MigrateStrategy).
	Migrate *MigrateStrategy

	// ShutdownDelay is how long the client waits, once the allocation is
	// to stop, before it kills the group's tasks; nil means none. A stop
	// with NoShutdownDelay skips it.
	ShutdownDelay *time.Duration

	// Services are the group's `service` blocks (see services.go).
	Services []*Service `json:",omitempty"`
	// Scaling is the group's scaling policy (see ScalingPolicy).
	Scaling *ScalingPolicy
	// Volumes are the group's `volume` blocks by name (see volumes.go).
	Volumes map[string]*VolumeRequest `json:",omitempty"`
}

// LookupTask returns the named task, or nil.
func (tg *TaskGroup) LookupTask(name string) *Task {
	for _, t := range tg.Tasks {
		if t.Name == name {
			return t
		}
	}
	return nil
}

// Canonicalize fills the group's defaults from the job type.
func (tg *TaskGroup) Canonicalize(job *Job) {
	if tg.RestartPolicy == nil {
		tg.RestartPolicy = NewRestartPolicy(job.Type)
	}
	if tg.ReschedulePolicy == nil {
		tg.ReschedulePolicy = NewReschedulePolicy(job.Type)
	}
	if tg.EphemeralDisk == nil {
		tg.EphemeralDisk = DefaultEphemeralDisk()
	}
	if tg.Update == nil && job.Update != nil {
		tg.Update = job.Update.Copy()
	}
	if tg.Disconnect != nil && tg.Disconnect.Reconcile == "" {
		tg.Disconnect.Reconcile = ReconcileOptionBestScore
	}
	for _, t := range tg.Tasks {
		t.Canonicalize(job, tg)
	}
	for _, s := range tg.Services {
		if s != nil {
			s.canonicalize()
		}
	}
}

func (tg *TaskGroup) validate(job *Job) []string {
	var p problems
	if tg.Count < 0 {
		p.add("Task group count can't be negative")
	} else if tg.Count > MaxGroupCount {
		p.add("Task group count %d exceeds the maximum of %d instances per group", tg.Count, MaxGroupCount)
	} else if job != nil && (job.Type == JobTypeSystem || job.Type == JobTypeSysBatch) && tg.Count > 1 {
		p.add("Task group count %d can't exceed 1 for %s jobs: they run one allocation per eligible node", tg.Count, job.Type)
	}
	if len(tg.Tasks) == 0 {
		p.add("Missing tasks for task group")
	}
	for i, c := range tg.Constraints {
		if err := c.Validate(); err != nil {
			p.addErr(fmt.Sprintf("Constraint %d validation failed: ", i+1), err)
		}
	}
	for i, a := range tg.Affinities {
		if err := a.Validate(); err != nil {
			p.addErr(fmt.Sprintf("Affinity %d validation failed: ", i+1), err)
		}
	}
	for i, sp := range tg.Spreads {
		if err := sp.Validate(); err != nil {
			p.addErr(fmt.Sprintf("Spread %d validation failed: ", i+1), err)
		}
	}
	if tg.RestartPolicy != nil {
		if err := tg.RestartPolicy.Validate(); err != nil {
			p.addErr("", err)
		}
	}
	if tg.ReschedulePolicy != nil {
		if err := tg.ReschedulePolicy.Validate(); err != nil {
			p.addErr("", err)
		}
	}
	if tg.ShutdownDelay != nil && *tg.ShutdownDelay < 0 {
		p.add("ShutdownDelay must be a positive value")
	}
	if tg.EphemeralDisk != nil && tg.EphemeralDisk.SizeMB < 0 {
		p.add("ephemeral_disk size can't be negative")
	}
	p = append(p, tg.validateDisconnect(job)...)
	if tg.Update != nil && job != nil && (job.Type == JobTypeBatch || job.Type == JobTypeSysBatch) {
		// Upstream's words: a batch allocation runs to completion, so
		// there is nothing to roll out.
		p.add("Job type %q does not allow update block", job.Type)
	}
	p = append(p, tg.Update.validate()...)
	switch job.Type {
	case JobTypeSystem:
		p = append(p, tg.Update.validateSystem()...)
	case JobTypeService:
		p = append(p, tg.Update.validateService()...)
	}
	if u := tg.Update; u.Rolling() && u.Canary > 0 && tg.Count > 0 && u.Canary > tg.Count {
		// Upstream allows more canaries than count; placing more copies
		// than asked for on an edge fleet is what operators want least.
		p.add("update: canary (%d) can't exceed the group's count (%d)", u.Canary, tg.Count)
	}
	p = append(p, tg.validateNetworks()...)
	p = append(p, tg.Migrate.validate()...)
	p = append(p, tg.validateServices()...)
	p = append(p, tg.validateVolumes()...)
	if tg.Scaling != nil {
		p = append(p, tg.Scaling.validate(tg)...)
	}
	seen := map[string]bool{}
	leaders := 0
	for i, t := range tg.Tasks {
		if t.Name == "" {
			p.add("Task %d missing name", i+1)
		} else if seen[t.Name] {
			p.add("Task %d redefines '%s'", i+1, t.Name)
		} else if msg := taskNameProblem(t.Name); msg != "" {
			p.add("%s", msg)
		}
		seen[t.Name] = true
		if t.Leader {
			leaders++
		}
		for _, msg := range t.validate() {
			p.add("Task %s validation failed: %s", t.Name, msg)
		}
	}
	if leaders > 1 {
		p.add("Only one task may be marked as leader")
	}
	p = append(p, tg.validateLifecycle()...)
	return p
}

// Copy returns a deep copy.
func (tg *TaskGroup) Copy() *TaskGroup {
	if tg == nil {
		return nil
	}
	n := *tg
	n.Constraints = copyConstraints(tg.Constraints)
	n.Affinities = copyAffinities(tg.Affinities)
	n.Spreads = copySpreads(tg.Spreads)
	n.RestartPolicy = tg.RestartPolicy.Copy()
	n.ReschedulePolicy = tg.ReschedulePolicy.Copy()
	if tg.EphemeralDisk != nil {
		d := *tg.EphemeralDisk
		n.EphemeralDisk = &d
	}
	n.Meta = maps.Clone(tg.Meta)
	n.MaxClientDisconnect = copyDuration(tg.MaxClientDisconnect)
	n.StopAfterClientDisconnect = copyDuration(tg.StopAfterClientDisconnect)
	n.Disconnect = tg.Disconnect.Copy()
	n.Update = tg.Update.Copy()
	n.Networks = copyNetworks(tg.Networks)
	n.Migrate = tg.Migrate.Copy()
	n.ShutdownDelay = copyDuration(tg.ShutdownDelay)
	n.Services = copyServices(tg.Services)
	n.Scaling = tg.Scaling.Copy()
	n.Volumes = copyVolumes(tg.Volumes)
	if tg.Tasks != nil {
		n.Tasks = make([]*Task, len(tg.Tasks))
		for i, t := range tg.Tasks {
			n.Tasks[i] = t.Copy()
		}
	}
	return &n
}

// CombinedResources sums the resources of every task in the group.
func (tg *TaskGroup) CombinedResources() *Resources {
	r := &Resources{}
	if tg.EphemeralDisk != nil {
		r.DiskMB = tg.EphemeralDisk.SizeMB
	}
	for _, t := range tg.Tasks {
		if t.Resources != nil {
			r.CPU += t.Resources.CPU
			r.MemoryMB += t.Resources.MemoryMB
			r.MemoryMaxMB += t.Resources.MemoryMaxMB
			r.Cores += t.Resources.Cores
		}
	}
	return r
}

// Task is one process (or container, or fake) run by a driver.
type Task struct {
	Name          string
	Driver        string
	User          string
	Config        map[string]any
	Env           map[string]string
	Resources     *Resources
	Constraints   []*Constraint
	Affinities    []*Affinity
	RestartPolicy *RestartPolicy
	Meta          map[string]string
	KillTimeout   time.Duration
	KillSignal    string
	// ShutdownDelay is how long the client waits before sending the task
	// its kill signal when it is stopped, after the group's delay.
	ShutdownDelay time.Duration
	Leader        bool
	// LogConfig is the `logs` block; nil means DefaultLogConfig.
	LogConfig *LogConfig
	// DispatchPayload says where a dispatched job's payload is written.
	DispatchPayload *DispatchPayloadConfig
	// Artifacts are fetched into the task's directory before it starts.
	Artifacts []*TaskArtifact
	// Lifecycle is the `lifecycle` block; nil for a main task.
	Lifecycle *TaskLifecycleConfig
	// Services are the task's `service` blocks (see services.go).
	Services []*Service `json:",omitempty"`
	// Identity is the default `identity` block (see workload_identity.go).
	Identity *WorkloadIdentity `json:",omitempty"`
	// Identities are the named `identity` blocks, each with its own
	// audience, for a third party the task presents it to.
	Identities []*WorkloadIdentity `json:",omitempty"`
	// Templates are the `template` blocks (see templates.go).
	Templates []*Template `json:",omitempty"`
	// VolumeMounts are the task's `volume_mount` blocks (see volumes.go).
	VolumeMounts []*VolumeMount `json:",omitempty"`
}

// DefaultKillTimeout is how long a task gets between its kill signal and
// SIGKILL when the job does not say.
const DefaultKillTimeout = 5 * time.Second

// Canonicalize fills the task's defaults.
func (t *Task) Canonicalize(job *Job, tg *TaskGroup) {
	if t.Resources == nil {
		t.Resources = DefaultResources()
	} else {
		t.Resources.Canonicalize()
	}
	if t.KillTimeout == 0 {
		t.KillTimeout = DefaultKillTimeout
	}
	for _, tmpl := range t.Templates {
		tmpl.Canonicalize()
	}
	if t.RestartPolicy == nil && tg.RestartPolicy != nil {
		t.RestartPolicy = tg.RestartPolicy.Copy()
	}
	for _, s := range t.Services {
		if s != nil {
			s.canonicalize()
		}
	}
	canonicalizeVolumeMounts(t.VolumeMounts)
}

func (t *Task) validate() []string {
	var p problems
	if t.Driver == "" {
		p.add("Missing task driver")
	}
	if t.KillTimeout < 0 {
		p.add("KillTimeout must be a positive value")
	}
	if t.ShutdownDelay < 0 {
		p.add("ShutdownDelay must be a positive value")
	}
	if ValueDepth(t.Config, MaxNestingDepth) > MaxNestingDepth {
		p.add("Task config nests deeper than %d levels", MaxNestingDepth)
	}
	if t.Resources == nil {
		p.add("Missing task resources")
	} else if err := t.Resources.Validate(); err != nil {
		p.addErr("", err)
	}
	if t.Resources != nil && t.Resources.DiskMB > 0 {
		// Upstream's words: the disk is the group's ephemeral_disk.
		p.add("Task can't ask for disk resources, they have to be specified at the task group level.")
	}
	if t.RestartPolicy != nil && t.RestartPolicy.RenderTemplates {
		p.add("%s", errRenderTemplates)
	}
	for i, c := range t.Constraints {
		if err := c.Validate(); err != nil {
			p.addErr(fmt.Sprintf("Constraint %d validation failed: ", i+1), err)
		}
	}
	for i, a := range t.Affinities {
		if err := a.Validate(); err != nil {
			p.addErr(fmt.Sprintf("Affinity %d validation failed: ", i+1), err)
		}
	}
	if err := t.LogConfig.Validate(); err != nil {
		p.addErr("", err)
	}
	p = append(p, t.DispatchPayload.validate()...)
	for i, a := range t.Artifacts {
		if err := a.Validate(); err != nil {
			p.addErr(fmt.Sprintf("Artifact %d validation failed: ", i+1), err)
		}
	}
	if err := t.Lifecycle.Validate(); err != nil {
		p.add("Lifecycle validation failed: %v", err)
	}
	p = append(p, t.Identity.validate()...)
	p = append(p, validateNamedIdentities(t.Identities)...)
	p = append(p, validateTemplates(t.Templates)...)
	return p
}

// Copy returns a deep copy.
func (t *Task) Copy() *Task {
	if t == nil {
		return nil
	}
	n := *t
	n.Config = copyMapAny(t.Config)
	n.Env = maps.Clone(t.Env)
	n.Meta = maps.Clone(t.Meta)
	n.Constraints = copyConstraints(t.Constraints)
	n.Affinities = copyAffinities(t.Affinities)
	n.RestartPolicy = t.RestartPolicy.Copy()
	n.LogConfig = t.LogConfig.Copy()
	n.Identity = t.Identity.Copy()
	n.Identities = copyIdentities(t.Identities)
	n.Templates = copyTemplates(t.Templates)
	n.DispatchPayload = t.DispatchPayload.Copy()
	n.Artifacts = copyArtifacts(t.Artifacts)
	n.Lifecycle = t.Lifecycle.Copy()
	n.Services = copyServices(t.Services)
	n.VolumeMounts = copyVolumeMounts(t.VolumeMounts)
	if t.Resources != nil {
		r := *t.Resources
		n.Resources = &r
	}
	return &n
}

// Constraint operators.
const (
	ConstraintDistinctHosts     = "distinct_hosts"
	ConstraintDistinctProperty  = "distinct_property"
	ConstraintRegex             = "regexp"
	ConstraintVersion           = "version"
	ConstraintSemver            = "semver"
	ConstraintSetContains       = "set_contains"
	ConstraintSetContainsAll    = "set_contains_all"
	ConstraintSetContainsAny    = "set_contains_any"
	ConstraintAttributeIsSet    = "is_set"
	ConstraintAttributeIsNotSet = "is_not_set"
)

// Constraint restricts the nodes a job, group or task may run on.
type Constraint struct {
	LTarget string
	RTarget string
	Operand string
}

func (c *Constraint) String() string { return fmt.Sprintf("%s %s %s", c.LTarget, c.Operand, c.RTarget) }

// Validate checks the operator and its operands.
func (c *Constraint) Validate() error {
	var p problems
	switch c.Operand {
	case "", "=", "==", "is", "!=", "not", "<", "<=", ">", ">=":
		if c.LTarget == "" {
			p.add("No LTarget provided but is required by constraint")
		}
	case ConstraintRegex, ConstraintVersion, ConstraintSemver, ConstraintSetContains,
		ConstraintSetContainsAll, ConstraintSetContainsAny:
		if c.LTarget == "" || c.RTarget == "" {
			p.add("Operator %q requires both an attribute and a value", c.Operand)
		}
	case ConstraintAttributeIsSet, ConstraintAttributeIsNotSet:
		if c.LTarget == "" {
			p.add("Operator %q requires an attribute", c.Operand)
		}
	case ConstraintDistinctHosts:
	case ConstraintDistinctProperty:
		if c.LTarget == "" {
			p.add("Operator %q requires an attribute", c.Operand)
		}
		if c.RTarget != "" {
			if n, err := strconv.Atoi(c.RTarget); err != nil || n < 1 {
				p.add("Operator %q: value %q must be a positive integer (allocations per property value)", c.Operand, c.RTarget)
			}
		}
	default:
		p.add("Unknown constraint type %q", c.Operand)
	}
	return p.err()
}

// Affinity expresses a preference (positive weight) or aversion (negative)
// for nodes matching an attribute.
type Affinity struct {
	LTarget string
	RTarget string
	Operand string
	Weight  int8
}

// Validate checks the operator and weight.
func (a *Affinity) Validate() error {
	var p problems
	if a.Weight == 0 {
		p.add("Affinity weight cannot be zero")
	}
	if a.Weight > 100 || a.Weight < -100 {
		p.add("Affinity weight must be within the range [-100,100]")
	}
	c := Constraint{LTarget: a.LTarget, RTarget: a.RTarget, Operand: a.Operand}
	if c.Operand == ConstraintDistinctHosts || c.Operand == ConstraintDistinctProperty {
		p.add("Affinity cannot use operator %q", c.Operand)
	} else if err := c.Validate(); err != nil {
		p.addErr("", err)
	}
	return p.err()
}

func copyConstraints(in []*Constraint) []*Constraint {
	if in == nil {
		return nil
	}
	out := make([]*Constraint, len(in))
	for i, c := range in {
		cc := *c
		out[i] = &cc
	}
	return out
}

func copyAffinities(in []*Affinity) []*Affinity {
	if in == nil {
		return nil
	}
	out := make([]*Affinity, len(in))
	for i, a := range in {
		aa := *a
		out[i] = &aa
	}
	return out
}

func copyDuration(d *time.Duration) *time.Duration { return copyPtr(d) }

func copyPtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

// copyMapAny deep-copies a decoded free-form map (task config).
func copyMapAny(in map[string]any) map[string]any {
	if in == nil {
		return nil
	}
	out := make(map[string]any, len(in))
	for k, v := range in {
		out[k] = copyAny(v)
	}
	return out
}

func copyAny(v any) any {
	switch x := v.(type) {
	case map[string]any:
		return copyMapAny(x)
	case []any:
		out := make([]any, len(x))
		for i := range x {
			out[i] = copyAny(x[i])
		}
		return out
	case []string:
		return slices.Clone(x)
	case []map[string]any: // the job file parser's repeated blocks
		out := make([]map[string]any, len(x))
		for i := range x {
			out[i] = copyMapAny(x[i])
		}
		return out
	}
	return v
}
