package api

import "time"

// Restart policy modes: what the client does once a task has used up its
// restart attempts within the interval.
const (
	// RestartPolicyModeDelay waits for the interval to roll over and tries
	// again.
	RestartPolicyModeDelay = "delay"
	// RestartPolicyModeFail fails the task (and so, usually, the allocation,
	// which hands it to the reschedule policy).
	RestartPolicyModeFail = "fail"
)

// Reschedule delay functions.
const (
	DelayFunctionConstant    = "constant"
	DelayFunctionExponential = "exponential"
	DelayFunctionFibonacci   = "fibonacci"
)

// Reconcile strategies of a disconnect block: which copy survives when a
// disconnected node comes back and both the original allocation and its
// replacement are running.
const (
	ReconcileOptionBestScore       = "best_score"
	ReconcileOptionKeepOriginal    = "keep_original"
	ReconcileOptionKeepReplacement = "keep_replacement"
	ReconcileOptionLongestRunning  = "longest_running"
)

// Defaults applied by Canonicalize.
const (
	DefaultKillTimeout     = 5 * time.Second
	DefaultEphemeralDiskMB = 300
)

// TaskGroup is the unit of placement: all its tasks run together in one
// allocation on one node, Count times.
type TaskGroup struct {
	Name             *string
	Count            *int
	Constraints      []*Constraint
	Affinities       []*Affinity
	Spreads          []*Spread
	Tasks            []*Task
	RestartPolicy    *RestartPolicy
	Disconnect       *DisconnectStrategy
	ReschedulePolicy *ReschedulePolicy
	EphemeralDisk    *EphemeralDisk
	Meta             map[string]string
	Update           *UpdateStrategy
	Migrate          *MigrateStrategy
	// ShutdownDelay is how long the client waits, once the allocation is
	// to stop, before it sends the tasks their kill signal (nil: none).
	ShutdownDelay *time.Duration `json:",omitempty"`

	// StopAfterClientDisconnect is the legacy spelling of
	// Disconnect.StopOnClientAfter. Upstream ignores it since 1.10; we keep
	// honouring it because existing job files carry it.
	StopAfterClientDisconnect *time.Duration

	// MaxClientDisconnect is the legacy spelling of Disconnect.LostAfter,
	// honoured for the same reason.
	MaxClientDisconnect *time.Duration

	// Networks is the group's `network` block.
	Networks []*NetworkResource `json:",omitempty"`

	// Services are the group's `service` blocks (see services.go).
	Services []*Service `json:",omitempty"`
	// Scaling is the group's `scaling` block (see ScalingPolicy).
	Scaling *ScalingPolicy `json:",omitempty"`
	// Volumes are the group's `volume` blocks by name (see volumes.go).
	Volumes map[string]*VolumeRequest `json:",omitempty"`
}

// NewTaskGroup returns a group with a name and a count.
func NewTaskGroup(name string, count int) *TaskGroup {
	return &TaskGroup{Name: new(name), Count: new(count)}
}

// Canonicalize fills in the group's defaults, which depend on the job type
// (restart and reschedule policies differ between service and batch work),
// then canonicalizes its tasks. job must be canonicalized first, as
// Job.Canonicalize does.
func (g *TaskGroup) Canonicalize(job *Job) {
	jobType := JobTypeService
	if job != nil && job.Type != nil {
		jobType = *job.Type
	}

	if g.Name == nil {
		g.Name = new("")
	}
	if g.Count == nil {
		g.Count = new(1)
	}
	if g.EphemeralDisk == nil {
		g.EphemeralDisk = &EphemeralDisk{}
	}
	g.EphemeralDisk.Canonicalize()

	if job != nil && job.Reschedule != nil {
		merged := job.Reschedule.clone()
		merged.merge(g.ReschedulePolicy)
		g.ReschedulePolicy = merged
	}
	if job != nil && job.Migrate != nil {
		merged := job.Migrate.clone()
		merged.merge(g.Migrate)
		g.Migrate = merged
	}
	// System and sysbatch jobs run one allocation per node and never
	// reschedule elsewhere, so they get no policy unless the job gave one.
	if g.ReschedulePolicy == nil && jobType != JobTypeSystem && jobType != JobTypeSysbatch {
		g.ReschedulePolicy = &ReschedulePolicy{}
	}
	g.ReschedulePolicy.Canonicalize(jobType)

	rp := DefaultRestartPolicy(jobType)
	rp.Merge(g.RestartPolicy)
	g.RestartPolicy = rp

	for _, t := range g.Tasks {
		t.Canonicalize(g, job)
	}
	for _, s := range g.Services {
		s.Canonicalize(nil, g, job)
	}
	for _, a := range g.Affinities {
		a.Canonicalize()
	}
	for _, sp := range g.Spreads {
		sp.Canonicalize()
	}
	if g.Disconnect != nil {
		g.Disconnect.Canonicalize()
	}
	g.canonicalizeUpdate(job)
	g.canonicalizeMigrate(job)
	if g.Scaling != nil {
		g.Scaling.Canonicalize(*g.Count)
	}
}

// canonicalizeMigrate fills the migrate block of a service job's group,
// or any group that has one, with upstream's defaults, as the official
// client does.
func (g *TaskGroup) canonicalizeMigrate(job *Job) {
	if g.Migrate == nil {
		if job.Type == nil || *job.Type != JobTypeService {
			return
		}
		g.Migrate = &MigrateStrategy{}
	}
	m := g.Migrate
	if m.MaxParallel == nil {
		m.MaxParallel = new(1)
	}
	if m.HealthCheck == nil {
		m.HealthCheck = new("checks")
	}
	if m.MinHealthyTime == nil {
		m.MinHealthyTime = new(10 * time.Second)
	}
	if m.HealthyDeadline == nil {
		m.HealthyDeadline = new(5 * time.Minute)
	}
}

// Constrain adds a constraint to the group.
func (g *TaskGroup) Constrain(c *Constraint) *TaskGroup {
	g.Constraints = append(g.Constraints, c)
	return g
}

// AddTask adds a task to the group.
func (g *TaskGroup) AddTask(t *Task) *TaskGroup {
	g.Tasks = append(g.Tasks, t)
	return g
}

// Task is one process (or container, or VM) of a group, run by a driver.
type Task struct {
	Name   string
	Driver string
	// User is who the task runs as, for drivers that honour it (exec
	// defaults to "nobody").
	User string
	// Config is the driver's own configuration, opaque to the server; its
	// keys are whatever the driver documents (for mock_driver: run_for,
	// exit_code, ...).
	Config        map[string]any
	Env           map[string]string
	Resources     *Resources
	Constraints   []*Constraint
	Affinities    []*Affinity
	RestartPolicy *RestartPolicy
	Meta          map[string]string
	KillTimeout   *time.Duration
	KillSignal    string
	// ShutdownDelay is how long the client waits before sending this task
	// its kill signal, after the group's own delay; a plain duration, as
	// upstream's wire shape has it.
	ShutdownDelay time.Duration `json:",omitempty"`
	// Leader marks the task whose exit stops its siblings.
	Leader bool
	// LogConfig is the `logs` block: rotation of the task's output.
	LogConfig *LogConfig
	// DispatchPayload is the `dispatch_payload` block.
	DispatchPayload *DispatchPayloadConfig
	// Artifacts are the task's `artifact` blocks.
	Artifacts []*TaskArtifact `json:",omitempty"`
	// Lifecycle is the `lifecycle` block; nil for a main task.
	Lifecycle *TaskLifecycle
	// Services are the task's `service` blocks (see services.go).
	Services []*Service `json:",omitempty"`
	// Identity is the default `identity` block (see identity.go).
	Identity *WorkloadIdentity `json:",omitempty"`
	// Identities are the named `identity` blocks.
	Identities []*WorkloadIdentity `json:",omitempty"`
	// Templates are the `template` blocks (see templates.go).
	Templates []*Template `json:",omitempty"`
	// VolumeMounts are the task's `volume_mount` blocks (see volumes.go).
	VolumeMounts []*VolumeMount `json:",omitempty"`
}

// LogConfig is a task's `logs` block, as upstream's.
type LogConfig struct {
	MaxFiles      *int
	MaxFileSizeMB *int
}

// canonical returns l with upstream's defaults (10 files of 10 MB) filled.
func (l *LogConfig) canonical() *LogConfig {
	out := &LogConfig{}
	if l != nil {
		*out = *l
	}
	if out.MaxFiles == nil {
		out.MaxFiles = new(10)
	}
	if out.MaxFileSizeMB == nil {
		out.MaxFileSizeMB = new(10)
	}
	return out
}

// NewTask returns a task with a name and a driver.
func NewTask(name, driver string) *Task {
	return &Task{Name: name, Driver: driver}
}

// SetConfig sets one driver config key.
func (t *Task) SetConfig(key string, val any) *Task {
	if t.Config == nil {
		t.Config = make(map[string]any)
	}
	t.Config[key] = val
	return t
}

// Canonicalize fills in the task's defaults. A task inherits its group's
// (canonical) restart policy, with its own fields layered on top, so the
// group must be canonicalized first, as TaskGroup.Canonicalize does.
func (t *Task) Canonicalize(g *TaskGroup, job *Job) {
	for _, s := range t.Services {
		s.Canonicalize(t, g, job)
	}
	if t.Resources == nil {
		t.Resources = &Resources{}
	}
	t.Resources.Canonicalize()
	if t.KillTimeout == nil {
		t.KillTimeout = new(DefaultKillTimeout)
	}
	for _, a := range t.Affinities {
		a.Canonicalize()
	}
	t.LogConfig = t.LogConfig.canonical()
	for _, a := range t.Artifacts {
		a.Canonicalize()
	}
	for _, m := range t.VolumeMounts {
		m.Canonicalize()
	}

	// Deep-copy the group's policy rather than share it: a later edit of
	// one task's policy must not leak into its siblings or its group.
	var rp *RestartPolicy
	if g != nil {
		rp = g.RestartPolicy.clone()
	} else {
		rp = &RestartPolicy{}
	}
	rp.Merge(t.RestartPolicy)
	t.RestartPolicy = rp
}

// RestartPolicy says how the client restarts a failing task in place:
// Attempts restarts per Interval, Delay apart, then Mode.
type RestartPolicy struct {
	Interval        *time.Duration
	Attempts        *int
	Delay           *time.Duration
	Mode            *string
	RenderTemplates *bool
}

// DefaultRestartPolicy returns the policy a group of the given job type gets
// when its job file has none. Long-running services give up sooner (2
// attempts in 30m) than batch work (3 in 24h), as upstream does.
func DefaultRestartPolicy(jobType string) *RestartPolicy {
	switch jobType {
	case JobTypeService, JobTypeSystem:
		return &RestartPolicy{
			Interval:        new(30 * time.Minute),
			Attempts:        new(2),
			Delay:           new(15 * time.Second),
			Mode:            new(RestartPolicyModeFail),
			RenderTemplates: new(false),
		}
	default:
		return &RestartPolicy{
			Interval:        new(24 * time.Hour),
			Attempts:        new(3),
			Delay:           new(15 * time.Second),
			Mode:            new(RestartPolicyModeFail),
			RenderTemplates: new(false),
		}
	}
}

// clone returns a deep copy of r (an empty policy for nil).
func (r *RestartPolicy) clone() *RestartPolicy {
	if r == nil {
		return &RestartPolicy{}
	}
	return &RestartPolicy{
		Interval:        clonePtr(r.Interval),
		Attempts:        clonePtr(r.Attempts),
		Delay:           clonePtr(r.Delay),
		Mode:            clonePtr(r.Mode),
		RenderTemplates: clonePtr(r.RenderTemplates),
	}
}

// set copies src into dst when src is set: the field-by-field merge of
// two blocks.
func set[T any](dst **T, src *T) {
	if src != nil {
		*dst = clonePtr(src)
	}
}

func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	return new(*p)
}

// Merge overwrites r's fields with the ones set in o; a nil o is a no-op.
func (r *RestartPolicy) Merge(o *RestartPolicy) {
	if o == nil {
		return
	}
	if o.Interval != nil {
		r.Interval = o.Interval
	}
	if o.Attempts != nil {
		r.Attempts = o.Attempts
	}
	if o.Delay != nil {
		r.Delay = o.Delay
	}
	if o.Mode != nil {
		r.Mode = o.Mode
	}
	if o.RenderTemplates != nil {
		r.RenderTemplates = o.RenderTemplates
	}
}

// ReschedulePolicy says how the server replaces a failed allocation on
// another node. It also governs replacements of allocations whose node is
// disconnected (see DisconnectStrategy.Replace).
type ReschedulePolicy struct {
	Attempts      *int
	Interval      *time.Duration
	Delay         *time.Duration
	DelayFunction *string
	MaxDelay      *time.Duration
	Unlimited     *bool
}

// clone returns a copy of r whose pointers are its own.
func (r *ReschedulePolicy) clone() *ReschedulePolicy {
	return &ReschedulePolicy{
		Attempts: clonePtr(r.Attempts), Interval: clonePtr(r.Interval), Delay: clonePtr(r.Delay),
		DelayFunction: clonePtr(r.DelayFunction), MaxDelay: clonePtr(r.MaxDelay), Unlimited: clonePtr(r.Unlimited),
	}
}

// merge overwrites r's fields with the ones set in o; a nil o is a no-op.
func (r *ReschedulePolicy) merge(o *ReschedulePolicy) {
	if o == nil {
		return
	}
	set(&r.Attempts, o.Attempts)
	set(&r.Interval, o.Interval)
	set(&r.Delay, o.Delay)
	set(&r.DelayFunction, o.DelayFunction)
	set(&r.MaxDelay, o.MaxDelay)
	set(&r.Unlimited, o.Unlimited)
}

// DefaultReschedulePolicy returns the policy a group of the given job type
// gets when its job file has none: services retry forever with exponential
// backoff from 30s up to 1h; batch jobs retry once a day after 5s; other
// types (system, sysbatch) do not reschedule.
func DefaultReschedulePolicy(jobType string) *ReschedulePolicy {
	switch jobType {
	case JobTypeService:
		return &ReschedulePolicy{
			Attempts:      new(0),
			Interval:      new(time.Duration(0)),
			Delay:         new(30 * time.Second),
			DelayFunction: new(DelayFunctionExponential),
			MaxDelay:      new(time.Hour),
			Unlimited:     new(true),
		}
	case JobTypeBatch:
		return &ReschedulePolicy{
			Attempts:      new(1),
			Interval:      new(24 * time.Hour),
			Delay:         new(5 * time.Second),
			DelayFunction: new(DelayFunctionConstant),
			MaxDelay:      new(time.Duration(0)),
			Unlimited:     new(false),
		}
	default:
		// Unknown types get an all-zero policy rather than nil so that
		// canonicalizing a user-supplied policy never dereferences nil; the
		// server rejects the unknown type anyway.
		return &ReschedulePolicy{
			Attempts:      new(0),
			Interval:      new(time.Duration(0)),
			Delay:         new(time.Duration(0)),
			DelayFunction: new(""),
			MaxDelay:      new(time.Duration(0)),
			Unlimited:     new(false),
		}
	}
}

// Canonicalize fills unset fields from the job type's default policy. It is
// nil-safe because system jobs legitimately have no policy.
func (r *ReschedulePolicy) Canonicalize(jobType string) {
	if r == nil {
		return
	}
	d := DefaultReschedulePolicy(jobType)
	if r.Attempts == nil {
		r.Attempts = d.Attempts
	}
	if r.Interval == nil {
		r.Interval = d.Interval
	}
	if r.Delay == nil {
		r.Delay = d.Delay
	}
	if r.DelayFunction == nil {
		r.DelayFunction = d.DelayFunction
	}
	if r.MaxDelay == nil {
		r.MaxDelay = d.MaxDelay
	}
	if r.Unlimited == nil {
		r.Unlimited = d.Unlimited
	}
}

// DisconnectStrategy is the group's behaviour when its node stops
// heartbeating: how long the allocation may stay "unknown" before it is
// "lost" (LostAfter), when the client stops it on its own
// (StopOnClientAfter), whether a replacement is placed meanwhile (Replace)
// and which copy survives a reconnect (Reconcile, one of the
// ReconcileOption constants).
type DisconnectStrategy struct {
	LostAfter         *time.Duration
	StopOnClientAfter *time.Duration
	Replace           *bool
	Reconcile         *string
	// OfflineRestart is beyond upstream: false stops a client that
	// restarted without reaching a server from restarting the group's
	// dead tasks on its own. Nil means true for groups with a lost window.
	OfflineRestart *bool `json:",omitempty"`
}

// Canonicalize fills in Replace (true) and Reconcile (best_score). The
// durations stay nil: unset and "0s" both mean "feature off", and the server
// must be able to tell a legacy field from a block field.
func (d *DisconnectStrategy) Canonicalize() {
	if d.Replace == nil {
		d.Replace = new(true)
	}
	if d.Reconcile == nil {
		d.Reconcile = new(ReconcileOptionBestScore)
	}
}

// EphemeralDisk is the scratch disk shared by a group's tasks. Sticky asks
// the scheduler to keep a replacement on the same node so the data
// survives; Migrate asks the client to copy it when it cannot.
type EphemeralDisk struct {
	Sticky  *bool
	Migrate *bool
	SizeMB  *int
}

// Canonicalize fills in the defaults (300 MB, neither sticky nor migrated).
func (e *EphemeralDisk) Canonicalize() {
	if e.Sticky == nil {
		e.Sticky = new(false)
	}
	if e.Migrate == nil {
		e.Migrate = new(false)
	}
	if e.SizeMB == nil {
		e.SizeMB = new(DefaultEphemeralDiskMB)
	}
}

// Task states.
const (
	TaskStatePending = "pending"
	TaskStateRunning = "running"
	TaskStateDead    = "dead"
)

// Task event types, shown verbatim by `alloc status`.
const (
	TaskSetup             = "Task Setup"
	TaskSetupFailure      = "Setup Failure"
	TaskDriverFailure     = "Driver Failure"
	TaskDriverMessage     = "Driver"
	TaskReceived          = "Received"
	TaskFailedValidation  = "Failed Validation"
	TaskStarted           = "Started"
	TaskTerminated        = "Terminated"
	TaskKilling           = "Killing"
	TaskKilled            = "Killed"
	TaskRestarting        = "Restarting"
	TaskNotRestarting     = "Not Restarting"
	TaskSiblingFailed     = "Sibling Task Failed"
	TaskSignaling         = "Signaling"
	TaskRestartSignal     = "Restart Signaled"
	TaskLeaderDead        = "Leader Task Dead"
	TaskBuildingTaskDir   = "Building Task Directory"
	TaskClientReconnected = "Reconnected"
	// TaskRestartedOffline is beyond upstream: the client restarted the
	// task after its own restart without reaching any server.
	TaskRestartedOffline       = "Restarted while disconnected"
	TaskDownloadingArtifacts   = "Downloading Artifacts"
	TaskArtifactDownloadFailed = "Failed Artifact Download"
)

// TaskState is the client-reported state of one task of an allocation.
type TaskState struct {
	State       string
	Failed      bool
	Restarts    uint64
	LastRestart time.Time
	StartedAt   time.Time
	FinishedAt  time.Time
	Events      []*TaskEvent
}

// TaskEvent is one entry of a task's history. Time is Unix nanoseconds.
// Details carries the event's specifics as strings; the typed fields after
// Message are upstream's older spelling of the same facts, kept because
// tools still read them.
type TaskEvent struct {
	Type           string
	Time           int64
	DisplayMessage string
	Details        map[string]string
	Message        string

	FailsTask     bool
	RestartReason string
	SetupError    string
	DriverError   string
	DriverMessage string
	ExitCode      int
	Signal        int
	KillReason    string
	KillTimeout   time.Duration
	KillError     string
	StartDelay    int64
	FailedSibling string
	DownloadError string `json:",omitempty"`
}
