package structs

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Allocation desired statuses: what the server wants.
const (
	AllocDesiredStatusRun   = "run"
	AllocDesiredStatusStop  = "stop"
	AllocDesiredStatusEvict = "evict"
)

// Allocation client statuses: what the client (or, for unknown and lost, the
// scheduler on its behalf) reports.
const (
	AllocClientStatusPending  = "pending"
	AllocClientStatusRunning  = "running"
	AllocClientStatusComplete = "complete"
	AllocClientStatusFailed   = "failed"
	AllocClientStatusLost     = "lost"
	// AllocClientStatusUnknown marks an allocation on a disconnected node
	// within its group's lost window. It is NOT terminal: the tasks may well
	// be running and the allocation may come back.
	AllocClientStatusUnknown = "unknown"
)

// Descriptions the scheduler writes on allocations it changes.
const (
	AllocUnknown                 = "alloc is unknown since its node is disconnected"
	AllocLost                    = "alloc is lost since its node is down"
	AllocNotNeeded               = "alloc not needed due to job update"
	AllocReconnected             = "alloc not needed due to disconnected client reconnect"
	AllocRescheduled             = "alloc was rescheduled because it failed"
	AllocMigrating               = "alloc is being migrated"
	AllocUpdating                = "alloc is being updated due to job update"
	AllocStopped                 = "alloc was stopped by an operator"
	AllocNodeTainted             = "alloc not needed as node is tainted"
	AllocJobStopped              = "alloc not needed since job was stopped"
	AllocClientStatusUnknownDesc = AllocUnknown
)

// Allocation places one instance of a task group on one node.
type Allocation struct {
	ID        string
	Namespace string
	EvalID    string
	Name      string
	NodeID    string
	NodeName  string
	JobID     string
	// Job is the version of the job this allocation runs. Decisions about
	// the allocation read the group config from here, not from the newest job.
	Job       *Job
	TaskGroup string

	AllocatedResources *AllocatedResources
	Metrics            *AllocMetric

	DesiredStatus      string
	DesiredDescription string
	DesiredTransition  DesiredTransition
	ClientStatus       string
	ClientDescription  string
	TaskStates         map[string]*TaskState

	// AllocStates is the history of server-observed client status changes
	// (unknown, and the status after a reconnect), oldest first, at most
	// MaxRetainedAllocStates of them: a node that flaps for a week must not
	// grow its allocations without bound.
	AllocStates []*AllocState

	PreviousAllocation string
	NextAllocation     string
	RescheduleTracker  *RescheduleTracker
	FollowupEvalID     string

	// DeploymentID is the deployment that placed the allocation;
	// DeploymentStatus its health in it (the client's report, kept by
	// every server-side write, unknown markings included).
	DeploymentID     string
	DeploymentStatus *AllocDeploymentStatus

	// PreemptedAllocations are the allocations evicted to make room for
	// this one; PreemptedByAllocation is the allocation this one was
	// evicted for (upstream's fields).
	PreemptedAllocations  []string
	PreemptedByAllocation string

	// ReconnectDecision is the last reconnect resolution this allocation
	// took part in, kept or stopped; nil if none. Not in upstream's API.
	ReconnectDecision *ReconnectDecision `json:",omitempty"`

	// PoolDisconnect is the disconnect policy of the node pool the
	// allocation was placed in, for groups that set none (see
	// ResolveDisconnect); nil if the pool has none. Not in upstream's API.
	PoolDisconnect *PoolDisconnect `json:",omitempty"`

	CreateIndex      uint64
	ModifyIndex      uint64
	AllocModifyIndex uint64
	CreateTime       int64
	ModifyTime       int64
}

// ServerTerminalStatus reports whether the server wants the allocation gone.
func (a *Allocation) ServerTerminalStatus() bool {
	switch a.DesiredStatus {
	case AllocDesiredStatusStop, AllocDesiredStatusEvict:
		return true
	}
	return false
}

// ClientTerminalStatus reports whether the allocation has finished for good
// on its client. Unknown is deliberately not terminal.
func (a *Allocation) ClientTerminalStatus() bool { return ClientTerminal(a.ClientStatus) }

// ClientTerminal reports whether a client status is terminal: complete,
// failed or lost. Pending, running and unknown are not.
func ClientTerminal(status string) bool {
	switch status {
	case AllocClientStatusComplete, AllocClientStatusFailed, AllocClientStatusLost:
		return true
	}
	return false
}

// ClientSettable reports whether a client may report status for one of its
// allocations: pending, running, complete or failed. Unknown and lost are
// the servers' verdicts about a node they cannot hear; a client that could
// write them could hide a live task or make the scheduler replace one.
func ClientSettable(status string) bool {
	switch status {
	case AllocClientStatusPending, AllocClientStatusRunning, AllocClientStatusComplete, AllocClientStatusFailed:
		return true
	}
	return false
}

// TerminalStatus is server-terminal or client-terminal.
func (a *Allocation) TerminalStatus() bool {
	return a.ServerTerminalStatus() || a.ClientTerminalStatus()
}

// NamespacedID returns the allocation's key.
func (a *Allocation) NamespacedID() NamespacedID {
	return NamespacedID{ID: a.ID, Namespace: a.Namespace}
}

// JobNamespacedID returns the key of the allocation's job.
func (a *Allocation) JobNamespacedID() NamespacedID {
	return NamespacedID{ID: a.JobID, Namespace: a.Namespace}
}

// Index returns the instance index encoded in the name ("job.group[3]" → 3).
func (a *Allocation) Index() uint {
	l := strings.LastIndexByte(a.Name, '[')
	r := strings.LastIndexByte(a.Name, ']')
	if l < 0 || r <= l {
		return 0
	}
	n, err := strconv.ParseUint(a.Name[l+1:r], 10, 32)
	if err != nil {
		return 0
	}
	return uint(n)
}

// AllocName returns the name of instance idx of a group.
func AllocName(job, group string, idx uint) string { return fmt.Sprintf("%s.%s[%d]", job, group, idx) }

// LookupTaskGroup returns the allocation's group from its own job version.
func (a *Allocation) LookupTaskGroup() *TaskGroup { return a.Job.LookupTaskGroup(a.TaskGroup) }

// Bounds on the histories an allocation carries. Only the newest entries
// decide anything (UnknownSince reads the last client status change), so
// dropping the oldest never changes a decision.
const (
	MaxRetainedAllocStates = 10
	// MaxRetainedTaskEvents is upstream's limit on a task's events, the
	// same the client keeps.
	MaxRetainedTaskEvents = 10
)

// AppendState records a client status change observed by the server,
// keeping at most MaxRetainedAllocStates entries.
func (a *Allocation) AppendState(field AllocStateField, value string, now time.Time) {
	a.AllocStates = append(a.AllocStates, &AllocState{Field: field, Value: value, Time: now})
	a.TrimHistory()
}

// TrimHistory drops the oldest AllocStates beyond MaxRetainedAllocStates
// and the oldest events of each task beyond MaxRetainedTaskEvents. The
// state store calls it on every write, whatever the writer sent. It writes
// only what is over a bound, so a TaskState within bounds that is shared
// with a stored allocation is left untouched.
func (a *Allocation) TrimHistory() {
	if len(a.AllocStates) > MaxRetainedAllocStates {
		a.AllocStates = slices.Clone(a.AllocStates[len(a.AllocStates)-MaxRetainedAllocStates:])
	}
	for _, ts := range a.TaskStates {
		if ts != nil && len(ts.Events) > MaxRetainedTaskEvents {
			ts.Events = slices.Clone(ts.Events[len(ts.Events)-MaxRetainedTaskEvents:])
		}
	}
}

// UnknownSince returns when the allocation last became unknown, if that is
// the newest entry of the history.
func (a *Allocation) UnknownSince() (time.Time, bool) {
	for i := len(a.AllocStates) - 1; i >= 0; i-- {
		s := a.AllocStates[i]
		if s.Field != AllocStateFieldClientStatus {
			continue
		}
		if s.Value == AllocClientStatusUnknown {
			return s.Time, true
		}
		return time.Time{}, false
	}
	return time.Time{}, false
}

// NeedsToReconnect reports whether the server last saw this allocation as
// unknown: its client has not reported since the node disconnected.
func (a *Allocation) NeedsToReconnect() bool {
	_, ok := a.UnknownSince()
	return ok
}

// DisconnectTimeout is the instant the allocation's lost window ends: the
// last unknown transition plus the group's lost_after. ok is false when the
// allocation is not waiting to reconnect or the group has no window.
func (a *Allocation) DisconnectTimeout() (t time.Time, ok bool) {
	since, unknown := a.UnknownSince()
	if !unknown {
		return time.Time{}, false
	}
	window := a.DisconnectPolicy().LostAfter
	if window <= 0 {
		return time.Time{}, false
	}
	return since.Add(window), true
}

// Expired reports whether an unknown allocation's lost window has passed at now.
func (a *Allocation) Expired(now time.Time) bool {
	if a.ClientStatus != AllocClientStatusUnknown {
		return false
	}
	end, ok := a.DisconnectTimeout()
	return ok && !now.Before(end)
}

// SupportsDisconnect reports whether the allocation's group has a lost window.
func (a *Allocation) SupportsDisconnect() bool { return a.DisconnectPolicy().LostAfter > 0 }

// Copy returns a deep copy. Job is shared: jobs are immutable once stored.
func (a *Allocation) Copy() *Allocation {
	if a == nil {
		return nil
	}
	n := *a
	n.AllocatedResources = a.AllocatedResources.Copy()
	n.Metrics = a.Metrics.Copy()
	n.DesiredTransition = a.DesiredTransition.copy()
	n.PoolDisconnect = a.PoolDisconnect.Copy()
	if a.TaskStates != nil {
		n.TaskStates = make(map[string]*TaskState, len(a.TaskStates))
		for k, ts := range a.TaskStates {
			n.TaskStates[k] = ts.Copy()
		}
	}
	n.AllocStates = make([]*AllocState, len(a.AllocStates))
	for i, s := range a.AllocStates {
		c := *s
		n.AllocStates[i] = &c
	}
	if a.RescheduleTracker != nil {
		n.RescheduleTracker = a.RescheduleTracker.Copy()
	}
	n.ReconnectDecision = a.ReconnectDecision.Copy()
	n.DeploymentStatus = a.DeploymentStatus.Copy()
	n.PreemptedAllocations = slices.Clone(a.PreemptedAllocations)
	return &n
}

// CopySkipJob is Copy without the job pointer, for RPC payloads that carry
// the job separately.
func (a *Allocation) CopySkipJob() *Allocation {
	n := a.Copy()
	if n != nil {
		n.Job = nil
	}
	return n
}

// ComparableResources returns what the allocation takes from its node.
func (a *Allocation) ComparableResources() *ComparableResources {
	if a.AllocatedResources == nil {
		return &ComparableResources{}
	}
	return a.AllocatedResources.Comparable()
}

// Stub returns the list form.
func (a *Allocation) Stub() *AllocListStub {
	s := &AllocListStub{
		ID:                 a.ID,
		EvalID:             a.EvalID,
		Name:               a.Name,
		Namespace:          a.Namespace,
		NodeID:             a.NodeID,
		NodeName:           a.NodeName,
		JobID:              a.JobID,
		TaskGroup:          a.TaskGroup,
		DesiredStatus:      a.DesiredStatus,
		DesiredDescription: a.DesiredDescription,
		ClientStatus:       a.ClientStatus,
		ClientDescription:  a.ClientDescription,
		TaskStates:         a.TaskStates,
		FollowupEvalID:     a.FollowupEvalID,
		NextAllocation:     a.NextAllocation,
		RescheduleTracker:  a.RescheduleTracker,
		DeploymentStatus:   a.DeploymentStatus,
		CreateIndex:        a.CreateIndex,
		ModifyIndex:        a.ModifyIndex,
		CreateTime:         a.CreateTime,
		ModifyTime:         a.ModifyTime,
	}
	if a.Job != nil {
		s.JobType = a.Job.Type
		s.JobVersion = a.Job.Version
	}
	return s
}

// AllocListStub is the list form of an allocation.
type AllocListStub struct {
	ID                 string
	EvalID             string
	Name               string
	Namespace          string
	NodeID             string
	NodeName           string
	JobID              string
	JobType            string
	JobVersion         uint64
	TaskGroup          string
	DesiredStatus      string
	DesiredDescription string
	ClientStatus       string
	ClientDescription  string
	TaskStates         map[string]*TaskState
	FollowupEvalID     string
	NextAllocation     string
	RescheduleTracker  *RescheduleTracker
	DeploymentStatus   *AllocDeploymentStatus
	CreateIndex        uint64
	ModifyIndex        uint64
	CreateTime         int64
	ModifyTime         int64
}

// AllocStateField names what an AllocState entry records.
type AllocStateField uint8

// AllocStateFieldClientStatus records a client status.
const AllocStateFieldClientStatus AllocStateField = iota

// AllocState is one entry of an allocation's status history, stamped with
// server time.
type AllocState struct {
	Field AllocStateField
	Value string
	Time  time.Time
}

// DesiredTransition carries server intentions the client or reconciler act on.
type DesiredTransition struct {
	Migrate         *bool
	Reschedule      *bool
	ForceReschedule *bool
	NoShutdownDelay *bool
}

func (d DesiredTransition) copy() DesiredTransition {
	return DesiredTransition{
		Migrate:         copyPtr(d.Migrate),
		Reschedule:      copyPtr(d.Reschedule),
		ForceReschedule: copyPtr(d.ForceReschedule),
		NoShutdownDelay: copyPtr(d.NoShutdownDelay),
	}
}

// ShouldMigrate reports whether the allocation is marked for migration.
func (d DesiredTransition) ShouldMigrate() bool { return d.Migrate != nil && *d.Migrate }

// ShouldIgnoreShutdownDelay reports whether the stop asked the client to
// skip the group's and tasks' shutdown_delay (-no-shutdown-delay).
func (d DesiredTransition) ShouldIgnoreShutdownDelay() bool {
	return d.NoShutdownDelay != nil && *d.NoShutdownDelay
}

// ShouldReschedule reports whether the allocation is marked for rescheduling.
func (d DesiredTransition) ShouldReschedule() bool { return d.Reschedule != nil && *d.Reschedule }

// RescheduleTracker records the reschedule attempts that led to an allocation.
type RescheduleTracker struct {
	Events         []*RescheduleEvent
	LastReschedule string
}

// Copy returns a copy.
func (r *RescheduleTracker) Copy() *RescheduleTracker {
	if r == nil {
		return nil
	}
	n := *r
	n.Events = make([]*RescheduleEvent, len(r.Events))
	for i, e := range r.Events {
		c := *e
		n.Events[i] = &c
	}
	return &n
}

// RescheduleEvent is one reschedule attempt.
type RescheduleEvent struct {
	RescheduleTime int64
	PrevAllocID    string
	PrevNodeID     string
	Delay          time.Duration
}

// AllocatedResources is what the scheduler gave the allocation.
type AllocatedResources struct {
	Tasks  map[string]*AllocatedTaskResources
	Shared AllocatedSharedResources
}

// AllocatedTaskResources is one task's share.
type AllocatedTaskResources struct {
	Cpu    AllocatedCpuResources
	Memory AllocatedMemoryResources
}

// AllocatedCpuResources is CPU in MHz shares.
type AllocatedCpuResources struct {
	CpuShares int64
}

// AllocatedMemoryResources is memory in MB.
type AllocatedMemoryResources struct {
	MemoryMB    int64
	MemoryMaxMB int64
}

// AllocatedSharedResources is shared by the group's tasks.
type AllocatedSharedResources struct {
	DiskMB int64
	// Ports are the host ports of the group's network block.
	Ports AllocatedPorts
}

// Copy returns a deep copy.
func (r *AllocatedResources) Copy() *AllocatedResources {
	if r == nil {
		return nil
	}
	n := *r
	n.Shared.Ports = r.Shared.Ports.Copy()
	if r.Tasks != nil {
		n.Tasks = make(map[string]*AllocatedTaskResources, len(r.Tasks))
		for k, t := range r.Tasks {
			c := *t
			n.Tasks[k] = &c
		}
	}
	return &n
}

// Comparable flattens the allocation's resources.
func (r *AllocatedResources) Comparable() *ComparableResources {
	c := &ComparableResources{DiskMB: r.Shared.DiskMB}
	for _, t := range r.Tasks {
		c.CPUShares += t.Cpu.CpuShares
		c.MemoryMB += t.Memory.MemoryMB
	}
	return c
}

// NewAllocatedResources derives the allocation's resources from its group.
func NewAllocatedResources(tg *TaskGroup) *AllocatedResources {
	r := &AllocatedResources{Tasks: make(map[string]*AllocatedTaskResources, len(tg.Tasks))}
	if tg.EphemeralDisk != nil {
		r.Shared.DiskMB = int64(tg.EphemeralDisk.SizeMB)
	}
	for _, t := range tg.Tasks {
		tr := &AllocatedTaskResources{}
		if t.Resources != nil {
			tr.Cpu.CpuShares = int64(t.Resources.CPU)
			tr.Memory.MemoryMB = int64(t.Resources.MemoryMB)
			tr.Memory.MemoryMaxMB = int64(t.Resources.MemoryMaxMB)
		}
		r.Tasks[t.Name] = tr
	}
	return r
}

// AllocMetric explains a placement: how many nodes were looked at, why
// others were filtered or exhausted, and the best scores.
type AllocMetric struct {
	NodesEvaluated     int
	NodesFiltered      int
	NodesInPool        int
	NodesAvailable     map[string]int
	ClassFiltered      map[string]int
	ConstraintFiltered map[string]int
	NodesExhausted     int
	ClassExhausted     map[string]int
	DimensionExhausted map[string]int
	QuotaExhausted     []string
	// ScoreMetaData holds the top node scores at placement time. The
	// reconnect logic compares these recorded scores; it never recomputes.
	ScoreMetaData     []*NodeScoreMeta
	AllocationTime    time.Duration
	CoalescedFailures int
}

// Copy returns a deep copy.
func (m *AllocMetric) Copy() *AllocMetric {
	if m == nil {
		return nil
	}
	n := *m
	n.NodesAvailable = maps.Clone(m.NodesAvailable)
	n.ClassFiltered = maps.Clone(m.ClassFiltered)
	n.ConstraintFiltered = maps.Clone(m.ConstraintFiltered)
	n.ClassExhausted = maps.Clone(m.ClassExhausted)
	n.DimensionExhausted = maps.Clone(m.DimensionExhausted)
	n.QuotaExhausted = slices.Clone(m.QuotaExhausted)
	n.ScoreMetaData = make([]*NodeScoreMeta, len(m.ScoreMetaData))
	for i, s := range m.ScoreMetaData {
		c := *s
		c.Scores = maps.Clone(s.Scores)
		n.ScoreMetaData[i] = &c
	}
	return &n
}

// NodeScore returns the normalised score recorded for nodeID, if any.
func (m *AllocMetric) NodeScore(nodeID string) (float64, bool) {
	if m == nil {
		return 0, false
	}
	for _, s := range m.ScoreMetaData {
		if s.NodeID == nodeID {
			return s.NormScore, true
		}
	}
	return 0, false
}

// NodeScoreMeta is one node's scores for a placement.
type NodeScoreMeta struct {
	NodeID    string
	Scores    map[string]float64
	NormScore float64
}

// Task states.
const (
	TaskStatePending = "pending"
	TaskStateRunning = "running"
	TaskStateDead    = "dead"
)

// TaskState is the client's view of one task.
type TaskState struct {
	State       string
	Failed      bool
	Restarts    uint64
	LastRestart time.Time
	StartedAt   time.Time
	FinishedAt  time.Time
	Events      []*TaskEvent
}

// Copy returns a deep copy.
func (t *TaskState) Copy() *TaskState {
	if t == nil {
		return nil
	}
	n := *t
	n.Events = make([]*TaskEvent, len(t.Events))
	for i, e := range t.Events {
		n.Events[i] = e.Copy()
	}
	return &n
}

// Successful reports whether the task finished without failing.
func (t *TaskState) Successful() bool { return t.State == TaskStateDead && !t.Failed }

// Task event types, as upstream names them.
const (
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
	TaskMainDead          = "Main Tasks Dead"
	TaskSetup             = "Task Setup"
	TaskClientReconnected = "Reconnected"
	TaskRestoreFailed     = "Failed Restoring Task"
	// TaskWaitingShuttingDownDelay and TaskSkippingShutdownDelay record a
	// task's shutdown_delay before its kill signal, waited or skipped.
	TaskWaitingShuttingDownDelay = "Waiting for shutdown delay"
	TaskSkippingShutdownDelay    = "Skipping shutdown delay"
	// TaskRestartedOffline is ours, beyond upstream: the client restarted
	// the task after its own restart without reaching any server.
	TaskRestartedOffline = "Restarted while disconnected"
	// TaskDownloadingArtifacts and TaskArtifactDownloadFailed bracket the
	// fetch of a task's artifacts.
	TaskDownloadingArtifacts   = "Downloading Artifacts"
	TaskArtifactDownloadFailed = "Failed Artifact Download"
	// TaskHookMessage and TaskHookFailed report what a hook did while the
	// task ran: a template's change_script, run or failed.
	TaskHookMessage = "Task hook message"
	TaskHookFailed  = "Task hook failed"
)

// TaskEvent is one entry of a task's history.
type TaskEvent struct {
	Type           string
	Time           int64 // unix nanoseconds
	Message        string
	DisplayMessage string
	Details        map[string]string

	FailsTask       bool
	RestartReason   string
	SetupError      string
	DriverError     string
	DriverMessage   string
	ExitCode        int
	Signal          int
	KillReason      string
	KillTimeout     time.Duration
	KillError       string
	StartDelay      int64
	FailedSibling   string
	ValidationError string
	DownloadError   string
}

// NewTaskEvent returns an event of the given type at now.
func NewTaskEvent(typ string, now time.Time) *TaskEvent {
	return &TaskEvent{Type: typ, Time: now.UnixNano()}
}

// Copy returns a copy.
func (e *TaskEvent) Copy() *TaskEvent {
	if e == nil {
		return nil
	}
	n := *e
	n.Details = maps.Clone(e.Details)
	return &n
}
