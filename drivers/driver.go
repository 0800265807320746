package drivers

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"time"
)

// Driver runs tasks of one kind on this node.
//
// The client's task runner is the only caller. It may call the methods from
// several goroutines at once, for different tasks and for the same task (for
// example WaitTask on one goroutine while StopTask runs on another), so every
// implementation must be safe for concurrent use.
//
// A task stays known to the driver from StartTask (or RecoverTask) until
// DestroyTask, including after it has exited: InspectTask and WaitTask keep
// answering for an exited task so that the runner can read its result late.
type Driver interface {
	// Name returns the name jobs use in a task's `driver` field.
	Name() string

	// Fingerprint reports whether the driver is usable on this node. The
	// client calls it at start and periodically and advertises the result
	// to the scheduler, which never places a task on a node whose driver is
	// undetected or unhealthy.
	Fingerprint() *Fingerprint

	// StartTask starts the task and returns the handle the client persists.
	// It returns ErrTaskExists when the ID is already tracked. A failure
	// that may go away on retry is wrapped with NewRecoverableError.
	StartTask(cfg *TaskConfig) (*TaskHandle, error)

	// RecoverTask re-attaches to a task started by an earlier client
	// process, from its persisted handle. It returns ErrTaskNotFound when the
	// task no longer exists, so that the runner can report it lost rather
	// than retrying. Recovering a task the driver already tracks is a no-op.
	RecoverTask(h *TaskHandle) error

	// WaitTask returns a channel that receives exactly one ExitResult when
	// the task exits (at once if it already has) and is then closed. If ctx
	// ends first the channel is closed without a value.
	WaitTask(ctx context.Context, taskID string) (<-chan *ExitResult, error)

	// StopTask asks the task to stop with signal (a name such as "SIGTERM";
	// empty means SIGTERM), forcibly kills it if it has not exited after
	// timeout, and returns once it has exited. Stopping an exited task is a
	// no-op.
	StopTask(taskID string, timeout time.Duration, signal string) error

	// DestroyTask releases everything the driver holds for the task and
	// forgets it. A running task is refused with ErrTaskRunning unless force
	// is set, in which case it is killed first.
	DestroyTask(taskID string, force bool) error

	// InspectTask returns a snapshot of the task's status.
	InspectTask(taskID string) (*TaskStatus, error)
}

// Fingerprint is a driver's report on its own usability on this node.
type Fingerprint struct {
	// Detected is false when the driver cannot work on this node at all
	// (wrong OS, missing runtime). Undetected drivers are not advertised.
	Detected bool

	// Healthy is false when the driver is present but must not receive
	// tasks, for example because the agent config leaves it disabled.
	Healthy bool

	// HealthDescription explains Healthy to an operator.
	HealthDescription string

	// Attributes are merged into the node's attributes, so that job
	// constraints can select on them (e.g. "driver.raw_exec" = "1").
	Attributes map[string]string
}

// Health descriptions shared by the built-in drivers, so that operators see the
// same words whichever driver reports.
const (
	HealthDescHealthy    = "healthy"
	HealthDescDisabled   = "disabled"
	HealthDescUndetected = "undetected"
)

// Resources are the resources the scheduler reserved for the task. Drivers
// that cannot enforce them (raw_exec) still receive them, for the environment
// and for inspection.
type Resources struct {
	CPUShares int
	MemoryMB  int
	// MemoryMaxMB is the hard memory limit when the job oversubscribes
	// (`memory_max`); zero means MemoryMB is the hard limit.
	MemoryMaxMB int
}

// TaskFinder is implemented by drivers whose tasks can be found without a
// persisted handle. A client whose state database was lost (a truncated
// file after a power cut) asks it before starting a task the servers
// assign, so that a task still running from before is adopted instead of
// started a second time beside its orphan.
type TaskFinder interface {
	// FindTask returns the handle of a running task that an earlier client
	// process started for cfg, re-attached as RecoverTask would, or
	// ErrTaskNotFound.
	FindTask(cfg *TaskConfig) (*TaskHandle, error)
}

// TaskConfig is everything a driver needs to start one task.
type TaskConfig struct {
	// ID uniquely identifies the task on this node: "<allocID>/<taskName>".
	ID            string
	Name          string
	AllocID       string
	JobName       string
	TaskGroupName string

	// Env is the task's environment, already interpolated by the client.
	Env map[string]string

	// Config is the task's `config` block as decoded from the wire. Values
	// are loosely typed (numbers may be int64, uint64, float64 or strings):
	// read it with ConfigDecoder.
	Config map[string]interface{}

	// User is the task's `user`; empty means the driver's default.
	User string

	// TaskDir is the task's own directory; LocalDir and SecretsDir are its
	// `local` and `secrets` subdirectories and AllocDir the allocation's
	// shared `alloc` directory, which isolating drivers mount inside the
	// task as /local, /secrets and /alloc.
	TaskDir    string
	LocalDir   string
	SecretsDir string
	AllocDir   string
	StdoutPath string
	StderrPath string
	Resources  Resources

	// Ports are the host ports the scheduler assigned to the allocation
	// from its group `network` block. Drivers that map ports (docker)
	// publish the ones a task names.
	Ports []Port

	// Mounts are the task's host volume mounts (mounts.go).
	Mounts []*MountConfig `json:",omitempty"`

	// NetNSPath is the allocation's network namespace when its group
	// network is in bridge mode: drivers whose Capabilities say
	// NetNamespace start the task in it. Empty: the host's.
	NetNSPath string `json:",omitempty"`

	// ResolvConfPath is the host path of the resolv.conf the group's
	// network.dns block asks for, which drivers whose Capabilities say
	// NetworkFiles show the task at /etc/resolv.conf. Empty: the
	// driver's default (the host's, or the engine's).
	ResolvConfPath string `json:",omitempty"`
	// HostsPath is the host path of the /etc/hosts naming Hostname, and
	// Hostname the group's network.hostname, which NetworkFiles drivers
	// give the task (bridge and cni modes only). Empty: the defaults.
	HostsPath string `json:",omitempty"`
	Hostname  string `json:",omitempty"`

	// Events, when set, receives progress messages a driver wants on the
	// task's event list, such as "Downloading image". It is not persisted:
	// a recovered task's config has none, and drivers must nil-check.
	Events func(message string) `json:"-" codec:"-"`
}

// Port is one port of the group's network: its label, the host port
// (static or picked by the scheduler) and the port inside the task that
// the host port forwards to (To; zero means the same number).
type Port struct {
	Label string
	Value int
	To    int
	// HostIP is the address of the port's host network when the port
	// names one (host_network other than "default"): drivers that
	// publish ports (docker) publish it there only. Empty: on every
	// address.
	HostIP string `json:",omitempty"`
}

// Emit sends message to c.Events if there is one.
func (c *TaskConfig) Emit(message string) {
	if c != nil && c.Events != nil {
		c.Events(message)
	}
}

// Copy returns a copy with its own Env and Config maps, so that a driver may
// keep the config while the caller goes on changing its own. Values inside
// Config are shared: drivers only read them.
func (c *TaskConfig) Copy() *TaskConfig {
	if c == nil {
		return nil
	}
	out := *c
	out.Env = maps.Clone(c.Env)
	out.Config = maps.Clone(c.Config)
	out.Ports = slices.Clone(c.Ports)
	out.Mounts = copyMounts(c.Mounts)
	return &out
}

// TaskState is the coarse state of a task as a driver sees it.
type TaskState string

// Task states. A driver never reports a task it does not track, so there is no
// "dead" or "unknown" here: those are the task runner's business.
const (
	TaskStateRunning TaskState = "running"
	TaskStateExited  TaskState = "exited"
)

// TaskHandle is what the client persists about a started task so that a later
// client process can re-attach to it with RecoverTask. The client stores it in
// its local database, so every field must survive encoding: DriverState in
// particular must be self-contained JSON (or msgpack), never a pointer into
// the driver's memory.
type TaskHandle struct {
	// Version is the layout version of DriverState, so that a driver can
	// refuse (or migrate) a handle written by an older release.
	Version     int
	Config      *TaskConfig
	State       TaskState
	StartedAt   time.Time
	DriverState []byte
}

// Copy returns a copy that shares nothing mutable with h.
func (h *TaskHandle) Copy() *TaskHandle {
	if h == nil {
		return nil
	}
	out := *h
	out.Config = h.Config.Copy()
	out.DriverState = append([]byte(nil), h.DriverState...)
	return &out
}

// NewTaskHandle is the handle of a task a driver has just started (or found
// running): version is the driver's DriverState layout, state its
// DriverState. The config is copied without its Events callback, which is
// not persisted and so never part of a handle.
func NewTaskHandle(version int, cfg *TaskConfig, startedAt time.Time, state any) (*TaskHandle, error) {
	h := &TaskHandle{Version: version, Config: cfg.Copy(), State: TaskStateRunning, StartedAt: startedAt}
	h.Config.Events = nil
	if err := h.SetDriverState(state); err != nil {
		return nil, err
	}
	return h, nil
}

// SetDriverState encodes v as JSON into DriverState.
func (h *TaskHandle) SetDriverState(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encoding driver state: %w", err)
	}
	h.DriverState = b
	return nil
}

// GetDriverState decodes DriverState into v. Errors wrap ErrInvalidHandle.
func (h *TaskHandle) GetDriverState(v any) error {
	if len(h.DriverState) == 0 {
		return fmt.Errorf("%w: empty driver state", ErrInvalidHandle)
	}
	if err := json.Unmarshal(h.DriverState, v); err != nil {
		return fmt.Errorf("%w: decoding driver state: %w", ErrInvalidHandle, err)
	}
	return nil
}

// ExitResult is how a task ended.
type ExitResult struct {
	// ExitCode is the process exit code. For a task killed by a signal it
	// follows the shell convention 128+signal, so that it is never 0.
	ExitCode int
	// Signal is the number of the signal that killed the task, or 0.
	Signal int
	// OOMKilled is set when the driver knows the kernel killed the task for
	// exceeding its memory limit.
	OOMKilled bool
	// Err is a driver-side failure, or ErrExitCodeUnknown when the exit was
	// seen but the status could not be read.
	Err error
}

// Successful reports whether the task ran to completion by its own choice:
// exit code 0, no signal, and no driver error. Restart policies and batch job
// completion hinge on it, so an unknown status is not a success.
func (r *ExitResult) Successful() bool {
	return r != nil && r.ExitCode == 0 && r.Signal == 0 && r.Err == nil
}

// Copy returns a shallow copy; Err is shared, errors being immutable.
func (r *ExitResult) Copy() *ExitResult {
	if r == nil {
		return nil
	}
	out := *r
	return &out
}

func (r *ExitResult) String() string {
	if r == nil {
		return "<nil>"
	}
	s := fmt.Sprintf("exit code %d", r.ExitCode)
	if r.Signal != 0 {
		s += fmt.Sprintf(", signal %d", r.Signal)
	}
	if r.OOMKilled {
		s += ", OOM killed"
	}
	if r.Err != nil {
		s += ", error: " + r.Err.Error()
	}
	return s
}

// TaskStatus is a point-in-time view of a task.
type TaskStatus struct {
	ID          string
	Name        string
	State       TaskState
	StartedAt   time.Time
	CompletedAt time.Time // zero while running
	ExitResult  *ExitResult
	// DriverAttributes carries driver specifics worth showing an operator,
	// such as the pid.
	DriverAttributes map[string]string
}

// FSIsolation is how a driver confines a task's view of the filesystem.
type FSIsolation string

const (
	// FSIsolationNone: the task sees the host's filesystem (raw_exec).
	FSIsolationNone FSIsolation = "none"
	// FSIsolationChroot: the task sees its task directory as /, with the
	// allocation's shared directory at /alloc and its own local and
	// secrets directories at /local and /secrets (exec).
	FSIsolationChroot FSIsolation = "chroot"
	// FSIsolationImage: the task sees its container image as /, with the
	// same /alloc, /local and /secrets as a chroot (docker).
	FSIsolationImage FSIsolation = "image"
)

// Capabilities are what a driver offers beyond the Driver interface that the
// client must know about before it starts a task.
type Capabilities struct {
	// FSIsolation decides which paths the task's NOMAD_ALLOC_DIR,
	// NOMAD_TASK_DIR and NOMAD_SECRETS_DIR (and ${...} references to them
	// in its config) name: host paths, or the paths inside the chroot.
	FSIsolation FSIsolation
	// LogFIFO says the driver opens StdoutPath and StderrPath with
	// OpenTaskLog and hands them to the task as its fds, so that the
	// client may make them FIFOs and rotate the task's logs itself.
	LogFIFO bool
	// NetNamespace says the driver starts a task in the namespace
	// TaskConfig.NetNSPath names; the client refuses a bridge-mode
	// allocation whose tasks' drivers do not.
	NetNamespace bool
	// NetworkFiles says the driver shows the task TaskConfig's
	// ResolvConfPath and HostsPath at /etc/resolv.conf and /etc/hosts and
	// sets its host name to Hostname; the client refuses a group with
	// network.dns or network.hostname whose tasks' drivers do not.
	NetworkFiles bool
}

// CapabilityReporter is implemented by drivers with capabilities other than
// the defaults.
type CapabilityReporter interface {
	Capabilities() Capabilities
}

// CapabilitiesOf returns d's capabilities; a driver that reports none has
// no filesystem isolation.
func CapabilitiesOf(d Driver) Capabilities {
	if r, ok := d.(CapabilityReporter); ok {
		return r.Capabilities()
	}
	return Capabilities{FSIsolation: FSIsolationNone}
}
