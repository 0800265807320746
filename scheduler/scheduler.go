package scheduler

import (
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-memdb"

	"github.com/nomad-edge/nomad/nomad/structs"
)

// State is the read-only view of the cluster a scheduler works from. The
// state store's snapshot implements it. Objects it returns are shared and
// immutable: the scheduler copies before it changes anything.
type State interface {
	// Nodes iterates over every node (*structs.Node).
	Nodes(ws memdb.WatchSet) (memdb.ResultIterator, error)
	// NodeByID returns nil, nil when the node does not exist.
	NodeByID(ws memdb.WatchSet, id string) (*structs.Node, error)
	// JobByID returns nil, nil when the job does not exist (purged).
	JobByID(ws memdb.WatchSet, namespace, id string) (*structs.Job, error)
	// AllocsByJob returns the job's allocations; anyCreateIndex includes
	// those of earlier jobs registered under the same ID.
	AllocsByJob(ws memdb.WatchSet, namespace, jobID string, anyCreateIndex bool) ([]*structs.Allocation, error)
	AllocsByNode(ws memdb.WatchSet, nodeID string) ([]*structs.Allocation, error)
	// AllocsByNodeTerminal returns the node's allocations whose
	// TerminalStatus equals terminal. Unknown allocations are not terminal.
	AllocsByNodeTerminal(ws memdb.WatchSet, nodeID string, terminal bool) ([]*structs.Allocation, error)
	EvalByID(ws memdb.WatchSet, id string) (*structs.Evaluation, error)
	LatestIndex() (uint64, error)
	// NodePoolByName returns nil, nil when the pool does not exist.
	NodePoolByName(ws memdb.WatchSet, name string) (*structs.NodePool, error)
	// LatestDeploymentByJobID returns nil, nil when the job never deployed.
	LatestDeploymentByJobID(ws memdb.WatchSet, namespace, jobID string) (*structs.Deployment, error)
	// SiteOutages returns the declared site outages.
	SiteOutages(ws memdb.WatchSet) ([]*structs.SiteOutage, error)
	// SchedulerConfig returns the operator's scheduler configuration (nil
	// until one is set: upstream's default, binpack).
	SchedulerConfig(ws memdb.WatchSet) (uint64, *structs.SchedulerConfiguration, error)
}

// Planner is how a scheduler changes the cluster. The server's worker
// implements it by sending plans to the plan applier and evaluations
// through raft; tests use schedtest.Harness.
type Planner interface {
	// SubmitPlan submits a plan. A non-nil State in the answer means part
	// of the plan was rejected and the scheduler must retry from it.
	SubmitPlan(*structs.Plan) (*structs.PlanResult, State, error)
	// UpdateEval records the evaluation's outcome.
	UpdateEval(*structs.Evaluation) error
	// CreateEval creates a follow-up or blocked evaluation.
	CreateEval(*structs.Evaluation) error
	// ReblockEval puts a blocked evaluation that still cannot place back
	// in the blocked set.
	ReblockEval(*structs.Evaluation) error
}

// Scheduler processes one evaluation. Process is called on one goroutine
// and must be deterministic given the State, the evaluation and now.
type Scheduler interface {
	Process(*structs.Evaluation) error
}

// Config is what every scheduler is built from.
type Config struct {
	// Logger may be nil: logs are then discarded.
	Logger hclog.Logger
	// State is the snapshot to read. Required.
	State State
	// Planner receives plans and evaluations. Required.
	Planner Planner
	// Now returns the server time to stamp allocations and evaluations
	// with and to measure reschedule delays and disconnect windows
	// against. Required: the scheduler never reads the clock itself.
	Now func() time.Time
	// Recorder counts what committed plans decided about disconnected
	// allocations; nil counts nothing (a dry run).
	Recorder Recorder
}

// Recorder is told what a committed plan decided about allocations whose
// node disconnected, for the server's counters. It is called after
// SubmitPlan returns, only for the part of the plan that committed, so a
// rejected attempt is counted when a later one commits it.
type Recorder interface {
	// Reconnect counts one resolution of a reconnecting allocation:
	// outcome is "resumed", "replacement_stopped" or "reconnected_stopped",
	// rule the rule that decided (as logged).
	Reconnect(outcome, rule string)
	// DisconnectReplacements counts replacements placed for unknown
	// allocations and replacements stopped because their original came
	// back and was kept.
	DisconnectReplacements(placed, stopped int)
}

type nopRecorder struct{}

func (nopRecorder) Reconnect(string, string)        {}
func (nopRecorder) DisconnectReplacements(int, int) {}

// Factory builds a scheduler from a validated Config.
type Factory func(Config) Scheduler

// Sentinel errors.
var (
	// ErrUnknownScheduler is returned by NewScheduler for a name that is
	// not in BuiltinSchedulers.
	ErrUnknownScheduler = errors.New("unknown scheduler")
	// ErrInvalidConfig is returned when a required Config field is missing.
	ErrInvalidConfig = errors.New("invalid scheduler config")
)

// BuiltinSchedulers maps an evaluation type (the job type) to its factory.
var BuiltinSchedulers = map[string]Factory{
	structs.JobTypeService:  NewServiceScheduler,
	structs.JobTypeBatch:    NewBatchScheduler,
	structs.JobTypeSystem:   NewSystemScheduler,
	structs.JobTypeSysBatch: NewSysBatchScheduler,
}

// SchedulerNames lists the built-in schedulers, sorted; the worker asks
// the broker for these.
func SchedulerNames() []string {
	names := make([]string, 0, len(BuiltinSchedulers))
	for n := range BuiltinSchedulers {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// NewScheduler returns the named scheduler built from cfg.
func NewScheduler(name string, cfg Config) (Scheduler, error) {
	f, ok := BuiltinSchedulers[name]
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrUnknownScheduler, name)
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return f(cfg.withDefaults()), nil
}

func (c Config) validate() error {
	switch {
	case c.State == nil:
		return fmt.Errorf("%w: State is nil", ErrInvalidConfig)
	case c.Planner == nil:
		return fmt.Errorf("%w: Planner is nil", ErrInvalidConfig)
	case c.Now == nil:
		return fmt.Errorf("%w: Now is nil", ErrInvalidConfig)
	}
	return nil
}

func (c Config) withDefaults() Config {
	if c.Logger == nil {
		c.Logger = hclog.NewNullLogger()
	}
	if c.Recorder == nil {
		c.Recorder = nopRecorder{}
	}
	return c
}
