package structs

import (
	"fmt"
	"time"
)

// Restart modes.
const (
	RestartPolicyModeDelay = "delay"
	RestartPolicyModeFail  = "fail"
)

// RestartPolicy says how the client restarts a failed task in place.
type RestartPolicy struct {
	Attempts        int
	Interval        time.Duration
	Delay           time.Duration
	Mode            string
	RenderTemplates bool
}

// NewRestartPolicy returns the default restart policy for a job type.
func NewRestartPolicy(jobType string) *RestartPolicy {
	switch jobType {
	case JobTypeBatch, JobTypeSysBatch:
		return &RestartPolicy{Attempts: 3, Interval: 24 * time.Hour, Delay: 15 * time.Second, Mode: RestartPolicyModeFail}
	}
	return &RestartPolicy{Attempts: 2, Interval: 30 * time.Minute, Delay: 15 * time.Second, Mode: RestartPolicyModeFail}
}

// Validate checks the policy.
func (r *RestartPolicy) Validate() error {
	var p problems
	switch r.Mode {
	case RestartPolicyModeDelay, RestartPolicyModeFail:
	default:
		p.add("Unsupported restart mode: %q", r.Mode)
	}
	if r.Attempts < 0 {
		p.add("Restart attempts can't be negative")
	}
	if r.Delay < 0 {
		p.add("Restart delay can't be negative")
	}
	if r.Interval < 0 {
		p.add("Restart interval can't be negative")
	}
	if r.RenderTemplates {
		p.add("%s", errRenderTemplates)
	}
	if r.Attempts > 0 && r.Interval > 0 && time.Duration(r.Attempts)*r.Delay > r.Interval {
		p.add("Nomad can't restart the TaskGroup %v times in an interval of %v with a delay of %v", r.Attempts, r.Interval, r.Delay)
	}
	return p.err()
}

// errRenderTemplates refuses restart's render_templates by name: it
// re-renders template blocks on restart, and there are none here.
const errRenderTemplates = "restart render_templates is not supported by this version: a restart does not render the templates again"

// Copy returns a copy.
func (r *RestartPolicy) Copy() *RestartPolicy {
	if r == nil {
		return nil
	}
	n := *r
	return &n
}

// Reschedule delay functions.
const (
	DelayFunctionConstant    = "constant"
	DelayFunctionExponential = "exponential"
	DelayFunctionFibonacci   = "fibonacci"
)

// ReschedulePolicy says how the server replaces a failed allocation on
// another node.
type ReschedulePolicy struct {
	Attempts      int
	Interval      time.Duration
	Delay         time.Duration
	DelayFunction string
	MaxDelay      time.Duration
	Unlimited     bool
}

// NewReschedulePolicy returns the default reschedule policy for a job type;
// system jobs are never rescheduled.
func NewReschedulePolicy(jobType string) *ReschedulePolicy {
	switch jobType {
	case JobTypeService:
		return &ReschedulePolicy{Delay: 30 * time.Second, DelayFunction: DelayFunctionExponential, MaxDelay: time.Hour, Unlimited: true}
	case JobTypeBatch:
		return &ReschedulePolicy{Attempts: 1, Interval: 24 * time.Hour, Delay: 5 * time.Second, DelayFunction: DelayFunctionConstant}
	}
	return nil
}

// Validate checks the policy.
func (r *ReschedulePolicy) Validate() error {
	var p problems
	if r.Attempts < 0 || r.Interval < 0 || r.Delay < 0 || r.MaxDelay < 0 {
		p.add("Reschedule policy durations and attempts can't be negative")
	}
	switch r.DelayFunction {
	case "", DelayFunctionConstant, DelayFunctionExponential, DelayFunctionFibonacci:
	default:
		p.add("Invalid delay function %q, must be one of %q", r.DelayFunction,
			[]string{DelayFunctionConstant, DelayFunctionExponential, DelayFunctionFibonacci})
	}
	if r.Unlimited && r.Attempts > 0 {
		p.add("Reschedule policy can't have both unlimited and a number of attempts")
	}
	return p.err()
}

// Enabled reports whether allocations may be rescheduled at all.
func (r *ReschedulePolicy) Enabled() bool {
	return r != nil && (r.Unlimited || (r.Attempts > 0 && r.Interval > 0))
}

// Copy returns a copy.
func (r *ReschedulePolicy) Copy() *ReschedulePolicy {
	if r == nil {
		return nil
	}
	n := *r
	return &n
}

// EphemeralDisk is the group's scratch space on the node.
type EphemeralDisk struct {
	Sticky  bool
	SizeMB  int
	Migrate bool
}

// DefaultEphemeralDisk is what a group gets when it asks for nothing.
func DefaultEphemeralDisk() *EphemeralDisk { return &EphemeralDisk{SizeMB: 300} }

// Reconcile strategies for a reconnecting allocation and its replacement.
const (
	ReconcileOptionBestScore       = "best_score"
	ReconcileOptionKeepOriginal    = "keep_original"
	ReconcileOptionKeepReplacement = "keep_replacement"
	ReconcileOptionLongestRunning  = "longest_running"
)

// ReconcileOptions lists the valid reconcile strategies, in documentation order.
var ReconcileOptions = []string{
	ReconcileOptionBestScore, ReconcileOptionKeepOriginal,
	ReconcileOptionKeepReplacement, ReconcileOptionLongestRunning,
}

// DisconnectStrategy is the group's disconnect block: what happens to its
// allocations while their node cannot reach the servers.
type DisconnectStrategy struct {
	LostAfter         time.Duration
	StopOnClientAfter *time.Duration
	Replace           *bool
	Reconcile         string
	// OfflineRestart (beyond upstream) lets a client that restarted
	// without reaching any server restart the group's tasks that died
	// meanwhile, within the lost window; nil means true. See
	// TaskGroup.OfflineRestart.
	OfflineRestart *bool
}

// Copy returns a copy.
func (d *DisconnectStrategy) Copy() *DisconnectStrategy {
	if d == nil {
		return nil
	}
	n := *d
	n.StopOnClientAfter = copyDuration(d.StopOnClientAfter)
	if d.Replace != nil {
		v := *d.Replace
		n.Replace = &v
	}
	if d.OfflineRestart != nil {
		v := *d.OfflineRestart
		n.OfflineRestart = &v
	}
	return &n
}

// LostAfter is the window during which an allocation on a disconnected node
// is unknown rather than lost; zero means the feature is off for the group.
// The legacy max_client_disconnect and the block's lost_after mean the same.
func (tg *TaskGroup) LostAfter() time.Duration {
	if tg == nil {
		return 0
	}
	if tg.Disconnect != nil && tg.Disconnect.LostAfter > 0 {
		return tg.Disconnect.LostAfter
	}
	if tg.MaxClientDisconnect != nil {
		return *tg.MaxClientDisconnect
	}
	return 0
}

// StopOnClientAfter is how long a client keeps the group's allocations
// running without server contact; zero means forever.
func (tg *TaskGroup) StopOnClientAfter() time.Duration {
	if tg == nil {
		return 0
	}
	if tg.Disconnect != nil && tg.Disconnect.StopOnClientAfter != nil {
		return *tg.Disconnect.StopOnClientAfter
	}
	if tg.StopAfterClientDisconnect != nil {
		return *tg.StopAfterClientDisconnect
	}
	return 0
}

// ReplaceOnDisconnect reports whether a replacement may be placed while an
// allocation is unknown. The default is true.
func (tg *TaskGroup) ReplaceOnDisconnect() bool {
	if tg == nil || tg.Disconnect == nil || tg.Disconnect.Replace == nil {
		return true
	}
	return *tg.Disconnect.Replace
}

// OfflineRestart reports whether a client that restarted while no server
// answers may restart the group's tasks that died while it was down (a
// power cut), until the lost window has run out since its last heartbeat
// (docs/concepts/disconnected-clients.md, "Offline reboot"). Only groups
// with a lost window qualify; for them the default is true.
func (tg *TaskGroup) OfflineRestart() bool {
	if tg.LostAfter() <= 0 {
		return false
	}
	return tg.Disconnect == nil || tg.Disconnect.OfflineRestart == nil || *tg.Disconnect.OfflineRestart
}

// ReconcileStrategy returns the group's reconcile strategy, best_score by default.
func (tg *TaskGroup) ReconcileStrategy() string {
	if tg == nil || tg.Disconnect == nil || tg.Disconnect.Reconcile == "" {
		return ReconcileOptionBestScore
	}
	return tg.Disconnect.Reconcile
}

func (tg *TaskGroup) validateDisconnect(job *Job) []string {
	var p problems
	neg := func(name string, d *time.Duration) {
		if d != nil && *d < 0 {
			p.add("%s can't be negative", name)
		}
	}
	neg("max_client_disconnect", tg.MaxClientDisconnect)
	neg("stop_after_client_disconnect", tg.StopAfterClientDisconnect)
	d := tg.Disconnect
	if d != nil {
		if d.LostAfter < 0 {
			p.add("disconnect.lost_after can't be negative")
		}
		neg("disconnect.stop_on_client_after", d.StopOnClientAfter)
		switch d.Reconcile {
		case "", ReconcileOptionBestScore, ReconcileOptionKeepOriginal,
			ReconcileOptionKeepReplacement, ReconcileOptionLongestRunning:
		default:
			p.add("disconnect.reconcile %q is not one of %v", d.Reconcile, ReconcileOptions)
		}
		// "0s" means not enabled, for either spelling, so only two enabled
		// settings of the same thing conflict.
		if positiveDuration(tg.MaxClientDisconnect) && d.LostAfter > 0 {
			p.add("max_client_disconnect and disconnect.lost_after both set; use only disconnect.lost_after")
		}
		if positiveDuration(tg.StopAfterClientDisconnect) && positiveDuration(d.StopOnClientAfter) {
			p.add("stop_after_client_disconnect and disconnect.stop_on_client_after both set; use only disconnect.stop_on_client_after")
		}
	}
	// Judge each spelling on its own, not through the accessors: when both
	// spellings are set the accessors see only one, and the other's
	// problems would surface only after the user fixed the first.
	lost := positiveDuration(tg.MaxClientDisconnect) || (d != nil && d.LostAfter > 0)
	stop := positiveDuration(tg.StopAfterClientDisconnect) || (d != nil && positiveDuration(d.StopOnClientAfter))
	if d != nil && d.OfflineRestart != nil && *d.OfflineRestart && !lost {
		p.add("disconnect.offline_restart = true needs a lost window (disconnect.lost_after or max_client_disconnect)")
	}
	if lost && stop {
		p.add("a lost window (max_client_disconnect / disconnect.lost_after) and a client stop (stop_after_client_disconnect / disconnect.stop_on_client_after) contradict each other; set only one")
	}
	if job != nil && (job.Type == JobTypeSystem || job.Type == JobTypeSysBatch) && stop {
		p.add("stop_after_client_disconnect / disconnect.stop_on_client_after can't be used with %s jobs", job.Type)
	}
	return p
}

// Resources is what a task asks for.
type Resources struct {
	CPU         int
	Cores       int
	MemoryMB    int
	MemoryMaxMB int
	DiskMB      int
}

// Resource defaults and minimums.
const (
	DefaultCPU      = 100
	DefaultMemoryMB = 300
	MinCPU          = 1
	MinMemoryMB     = 10
)

// DefaultResources is what a task gets when it asks for nothing.
func DefaultResources() *Resources { return &Resources{CPU: DefaultCPU, MemoryMB: DefaultMemoryMB} }

// Canonicalize fills zero fields with defaults.
func (r *Resources) Canonicalize() {
	if r.CPU == 0 && r.Cores == 0 {
		r.CPU = DefaultCPU
	}
	if r.MemoryMB == 0 {
		r.MemoryMB = DefaultMemoryMB
	}
}

// Validate checks the minimums.
func (r *Resources) Validate() error {
	var p problems
	if r.Cores < 0 {
		p.add("Cores can't be negative")
	}
	if r.Cores == 0 && r.CPU < MinCPU {
		p.add("minimum CPU value is %d; got %d", MinCPU, r.CPU)
	}
	if r.MemoryMB < MinMemoryMB {
		p.add("minimum MemoryMB value is %d; got %d", MinMemoryMB, r.MemoryMB)
	}
	if r.MemoryMaxMB != 0 && r.MemoryMaxMB < r.MemoryMB {
		p.add("MemoryMaxMB value (%d) should be larger than MemoryMB value (%d)", r.MemoryMaxMB, r.MemoryMB)
	}
	return p.err()
}

func (r *Resources) String() string {
	return fmt.Sprintf("cpu=%d memory=%dMB disk=%dMB", r.CPU, r.MemoryMB, r.DiskMB)
}

// positiveDuration reports whether an optional duration is set and enabled.
func positiveDuration(d *time.Duration) bool { return d != nil && *d > 0 }
