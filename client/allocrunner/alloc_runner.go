package allocrunner

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/nomad-edge/nomad/client/getter"
	"github.com/nomad-edge/nomad/client/state"
	"github.com/nomad-edge/nomad/drivers"
	"github.com/nomad-edge/nomad/helper/clock"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// StateUpdater receives an allocation's client-side state after every
// change: a partial allocation with ID, NodeID, Namespace, JobID,
// ClientStatus, ClientDescription and TaskStates. It is called from runner
// goroutines and must not block.
type StateUpdater interface {
	AllocStateUpdated(alloc *structs.Allocation)
}

// DriverManager returns the driver a task names.
type DriverManager interface {
	Driver(name string) (drivers.Driver, error)
}

// Config is the input of NewAllocRunner.
type Config struct {
	Logger hclog.Logger
	Clock  clock.Clock
	// Alloc is the allocation as the server sent it.
	Alloc *structs.Allocation
	// AllocDirRoot is the directory under which each allocation gets
	// its own.
	AllocDirRoot string
	Node         NodeInfo
	StateDB      state.StateDB
	Drivers      DriverManager
	StateUpdater StateUpdater
	// MaxKillTimeout caps each task's kill_timeout; zero means no cap.
	MaxKillTimeout time.Duration
	// Users is the client's user.denylist: a task of a checked driver
	// that names a denied user fails validation and never starts.
	Users UserPolicy
	// AdoptOrphans makes each task, before its first start, look for a
	// process an earlier client left running for it: set when the client
	// lost its state database and no longer has the tasks' handles.
	AdoptOrphans bool
	// AdoptReason says, in the task event of an adoption, why the client
	// looked ("its state was lost" when empty).
	AdoptReason string
	// TaskRunning, when set, is called the first time each task runs
	// under this client process (started, re-attached or adopted), once
	// its output is being read; it must not block.
	TaskRunning func(allocID, task string)
	// NotAdopted, when set, is called when an adoption found nothing,
	// just before the task's first start; the message it returns, if
	// any, goes into the task's events.
	NotAdopted func(allocID, task string) string
	// ServersContacted is closed once the client has heard from the
	// servers since it started; nil means it has. Until then a restored
	// task that did not survive the restart waits, unless
	// OfflineRestartUntil lets it start (see offlineGate).
	ServersContacted <-chan struct{}
	// OfflineRestartUntil is, on Clock, when the disconnect window of a
	// restored allocation runs out since the client's last heartbeat:
	// until then its dead tasks restart before any server answers, and
	// then it is stopped. Zero means they wait for the servers.
	OfflineRestartUntil time.Time
	// Artifacts fetches the tasks' artifacts (the client's artifact
	// block and cache); nil: defaults, no cache.
	Artifacts *getter.Getter
	// Services registers the allocation's services (provider "nomad")
	// in the servers' catalog; nil registers nothing.
	Services ServiceRegistrar
	// Identities signs the tasks' workload identities; nil: a task whose
	// identity block asks for its token fails to start.
	Identities IdentitySigner
	// Templates gives the tasks' templates their data; nil: a template
	// that reads variables or services fails to render.
	Templates TemplateSources
	// Network gives a bridge-mode allocation its namespace; nil: such an
	// allocation fails, with NetworkUnavailable as the reason.
	Network            NetworkManager
	NetworkUnavailable error
}

// AllocRunner runs one allocation. Call Run exactly once, in its own
// goroutine; the other methods are safe to call concurrently with it.
type AllocRunner struct {
	logger   hclog.Logger
	clock    clock.Clock
	id       string
	allocDir *AllocDir
	db       state.StateDB
	updater  StateUpdater

	tasks []*TaskRunner // in the group's order; fixed after construction
	// lifecycle orders the tasks' starts by their lifecycle blocks.
	lifecycle *coordinator

	mu           sync.RWMutex
	alloc        *structs.Allocation // latest from the server
	clientStatus string
	clientDesc   string
	taskStates   map[string]*structs.TaskState

	// stateMu serialises updateState, which both the Run loop and late
	// events (after Run) may call.
	stateMu    sync.Mutex
	autoKilled bool          // a dead leader or a failed task has killed the others
	health     healthTracker // guarded by stateMu
	services   *serviceHook
	checks     *checksHook
	network    *networkHook

	restored bool
	gate     *offlineGate
	started  atomic.Bool
	// selfStopped is set by the first Stop.
	selfStopped atomic.Bool
	// destroying is set by Destroy: its kills skip shutdown_delay, which
	// is for the servers' stops, not for tearing a client down.
	destroying atomic.Bool
	// skipDelayCh is closed when a stop asks to skip shutdown_delay after
	// the delays began (a second stop with -no-shutdown-delay) or the
	// runner is destroyed: the delays being waited end at once.
	skipDelayCh   chan struct{}
	skipDelayOnce sync.Once

	// stateCh coalesces task state notifications for the Run loop.
	stateCh chan struct{}
	runMu   sync.Mutex
	runDone bool

	shutdownCh   chan struct{}
	shutdownOnce sync.Once
	destroyCh    chan struct{}
	destroyOnce  sync.Once
	waitCh       chan struct{} // closed when Run returns
}

// NewAllocRunner builds the runner and its task runners; nothing runs
// until Run.
func NewAllocRunner(cfg Config) (*AllocRunner, error) {
	alloc := cfg.Alloc
	if alloc == nil || alloc.ID == "" {
		return nil, errors.New("alloc runner: an allocation with an ID is required")
	}
	tg := alloc.LookupTaskGroup()
	if tg == nil {
		return nil, fmt.Errorf("alloc runner %s: job has no task group %q", alloc.ID, alloc.TaskGroup)
	}
	logger := cfg.Logger
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	clk := cfg.Clock
	if clk == nil {
		clk = clock.Real()
	}
	ar := &AllocRunner{
		logger:       logger.Named("alloc_runner").With("alloc_id", alloc.ID),
		clock:        clk,
		id:           alloc.ID,
		allocDir:     NewAllocDir(cfg.AllocDirRoot, alloc.ID),
		db:           cfg.StateDB,
		updater:      cfg.StateUpdater,
		alloc:        alloc,
		clientStatus: structs.AllocClientStatusPending,
		clientDesc:   descPending,
		stateCh:      make(chan struct{}, 1),
		shutdownCh:   make(chan struct{}),
		destroyCh:    make(chan struct{}),
		skipDelayCh:  make(chan struct{}),
		waitCh:       make(chan struct{}),
	}
	ar.gate = newOfflineGate(cfg, ar.serverStopped)
	ar.lifecycle = newCoordinator(tg.Tasks)
	ar.network = &networkHook{logger: ar.logger, mgr: cfg.Network, unavailable: cfg.NetworkUnavailable, alloc: alloc, allocDir: ar.allocDir.Dir, node: cfg.Node}
	ar.services = newServiceHook(ar.logger, clk, cfg.Services, cfg.Node, ar.allocDir, ar.network.address)
	ar.checks = newChecksHook(ar.logger, clk, ar, cfg.Node)
	for _, task := range tg.Tasks {
		d, derr := cfg.Drivers.Driver(task.Driver)
		if derr != nil {
			// Not recoverable: the scheduler placed the task on a
			// node without its driver, and waiting will not help.
			derr = drivers.NewRecoverableError(fmt.Errorf("driver %q: %w", task.Driver, derr), false)
		}
		ar.tasks = append(ar.tasks, newTaskRunner(taskRunnerConfig{
			logger:    ar.logger,
			clock:     clk,
			alloc:     alloc,
			task:      task,
			allocDir:  ar.allocDir,
			node:      cfg.Node,
			driver:    d,
			driverErr: derr,
			db:        cfg.StateDB,
			notify:    ar.requestUpdate,
			maxKill:   cfg.MaxKillTimeout,
			adopt:     cfg.AdoptOrphans,
			adoptWhy:  cfg.AdoptReason,
			running:   cfg.TaskRunning,
			notFound:  cfg.NotAdopted,
			gate:      ar.gate,
			skipDelay: ar.skipShutdownDelay,
			cutDelay:  ar.skipDelayCh,
			shutdownDelay: func() time.Duration {
				return ar.taskShutdownDelay(task)
			},
			users:     cfg.Users,
			artifacts: cfg.Artifacts,
			lifecycle: ar.lifecycle,

			identities: cfg.Identities,
			templates:  cfg.Templates,
			network:    ar.network,
		}))
	}
	ar.network.tasks = ar.tasks
	return ar, nil
}

// Restore loads the tasks' persisted handles and states, so that Run
// re-attaches to running tasks instead of starting them. Call it before Run.
func (ar *AllocRunner) Restore(tasks map[string]*state.TaskRecord) {
	ar.restored = true
	for _, tr := range ar.tasks {
		if rec, ok := tasks[tr.Name()]; ok {
			tr.restore(rec)
		}
	}
	// Before any task runs: a prestart task that completed before the
	// client stopped must find its phase over, not open.
	ar.lifecycle.update(ar.currentTaskStates())
}

// currentTaskStates returns a copy of every task's state.
func (ar *AllocRunner) currentTaskStates() map[string]*structs.TaskState {
	states := make(map[string]*structs.TaskState, len(ar.tasks))
	for _, tr := range ar.tasks {
		states[tr.Name()] = tr.State()
	}
	return states
}

// ID returns the allocation ID.
func (ar *AllocRunner) ID() string { return ar.id }

// Alloc returns a copy of the allocation with its client-side state.
func (ar *AllocRunner) Alloc() *structs.Allocation {
	ar.mu.RLock()
	defer ar.mu.RUnlock()
	a := ar.alloc.Copy()
	a.ClientStatus = ar.clientStatus
	a.ClientDescription = ar.clientDesc
	a.TaskStates = make(map[string]*structs.TaskState, len(ar.tasks))
	for _, tr := range ar.tasks {
		if st, ok := ar.taskStates[tr.Name()]; ok {
			a.TaskStates[tr.Name()] = st.Copy()
		} else {
			a.TaskStates[tr.Name()] = tr.State()
		}
	}
	return a
}

// ClientStatus returns the allocation's client status, without the copy
// Alloc makes.
func (ar *AllocRunner) ClientStatus() string {
	ar.mu.RLock()
	defer ar.mu.RUnlock()
	return ar.clientStatus
}

// AllocModifyIndex returns the server index of the allocation the runner
// holds, for the client's diff against the server's list.
func (ar *AllocRunner) AllocModifyIndex() uint64 {
	ar.mu.RLock()
	defer ar.mu.RUnlock()
	return ar.alloc.AllocModifyIndex
}

// WaitCh is closed when Run has returned: every task is dead, or the runner
// was shut down.
func (ar *AllocRunner) WaitCh() <-chan struct{} { return ar.waitCh }

// Run builds the allocation directory, runs the tasks and reports their
// state until all are dead or the runner is shut down.
func (ar *AllocRunner) Run() {
	if !ar.started.CompareAndSwap(false, true) {
		return
	}
	defer ar.finish()
	select {
	case <-ar.shutdownCh:
		return
	default:
	}

	if !ar.restored {
		now := ar.clock.Now()
		for _, tr := range ar.tasks {
			tr.EmitEvent(newEvent(structs.TaskReceived, now))
		}
	}
	ar.mu.RLock()
	stopped := ar.alloc.ServerTerminalStatus()
	ar.mu.RUnlock()
	if stopped {
		// Stopped before it ever ran (or while the client was away):
		// the tasks are marked killed without starting.
		for _, tr := range ar.tasks {
			tr.Kill(nil)
		}
	}

	names := make([]string, len(ar.tasks))
	for i, tr := range ar.tasks {
		names[i] = tr.Name()
	}
	err := ar.allocDir.Build(names)
	if err != nil {
		ar.logger.Error("failed to build alloc dir", "error", err)
	} else if !stopped {
		// Before any task runs: they start in its namespace.
		if err = ar.network.setup(); err != nil {
			ar.logger.Error("failed to set up the allocation's network", "error", err)
		}
	}
	if err != nil {
		for _, tr := range ar.tasks {
			go tr.runSetupFailed(err)
		}
	} else {
		for _, tr := range ar.tasks {
			go tr.Run()
		}
	}
	if ar.restored {
		go ar.stopWhenOfflineWindowEnds()
	}
	allDone := make(chan struct{})
	go func() {
		for _, tr := range ar.tasks {
			<-tr.WaitCh()
		}
		close(allDone)
	}()

	// The first report carries the true state of a restored allocation
	// to the server, whatever it believed while the client was away.
	ar.updateState()
	for {
		select {
		case <-ar.stateCh:
			ar.updateState()
		case <-allDone:
			return
		}
	}
}

// finish ends Run: later notifications are handled synchronously, and the
// final state is reported unless the runner is shutting down.
func (ar *AllocRunner) finish() {
	ar.runMu.Lock()
	ar.runDone = true
	ar.runMu.Unlock()
	ar.stateMu.Lock()
	ar.health.stop()
	ar.stateMu.Unlock()
	ar.checks.stop()
	select {
	case <-ar.shutdownCh:
		// The tasks, and so their network, outlive the runner.
	default:
		ar.network.teardown()
		ar.updateState()
	}
	close(ar.waitCh)
}

// requestUpdate asks for the allocation's state to be recomputed and
// reported; task runners call it after every change.
func (ar *AllocRunner) requestUpdate() {
	ar.runMu.Lock()
	if !ar.runDone {
		select {
		case ar.stateCh <- struct{}{}:
		default:
		}
		ar.runMu.Unlock()
		return
	}
	ar.runMu.Unlock()
	ar.updateState()
}

// updateState derives the client status from the tasks, applies the
// group's leader and failure semantics, and reports the state.
func (ar *AllocRunner) updateState() {
	ar.stateMu.Lock()
	defer ar.stateMu.Unlock()

	states := ar.currentTaskStates()
	if !ar.autoKilled && len(ar.tasks) > 1 {
		ar.killSiblingsLocked(states)
	}
	ar.lifecycle.update(states)
	status, desc := ClientStatus(ar.lifecycle.statusStates(states, false))

	ar.mu.Lock()
	ar.clientStatus, ar.clientDesc, ar.taskStates = status, desc, states
	alloc := ar.alloc
	ar.mu.Unlock()
	ar.checks.observe(alloc, status)
	deployment := ar.judgeHealthLocked(alloc, ar.lifecycle.statusStates(states, true))
	ar.services.observe(alloc, status)

	if ar.updater == nil {
		return
	}
	update := &structs.Allocation{
		ID:                alloc.ID,
		NodeID:            alloc.NodeID,
		Namespace:         alloc.Namespace,
		JobID:             alloc.JobID,
		TaskGroup:         alloc.TaskGroup,
		ClientStatus:      status,
		ClientDescription: desc,
		TaskStates:        make(map[string]*structs.TaskState, len(states)),
		DeploymentStatus:  deployment,
	}
	for name, st := range states {
		update.TaskStates[name] = st.Copy()
	}
	ar.updater.AllocStateUpdated(update)
}

// killSiblingsLocked kills the other tasks once a task has failed for good
// or the group's leader has died (the group is only useful as a whole), or
// once only sidecars are left alive: they exist to serve the main tasks.
// Poststop tasks neither cause this nor are killed by it: they run after.
func (ar *AllocRunner) killSiblingsLocked(states map[string]*structs.TaskState) {
	now := ar.clock.Now()
	var reason func() *structs.TaskEvent
	why, hasSidecar, liveNonSidecar := "", false, false
	for _, tr := range ar.tasks {
		if tr.task.IsPoststop() {
			continue
		}
		hasSidecar = hasSidecar || tr.task.IsSidecar()
		st := states[tr.Name()]
		if st.State != structs.TaskStateDead {
			liveNonSidecar = liveNonSidecar || !tr.task.IsSidecar()
			continue
		}
		switch {
		case st.Failed && reason == nil:
			name := tr.Name()
			why = "failed task " + name
			reason = func() *structs.TaskEvent {
				e := newEvent(structs.TaskSiblingFailed, now)
				e.FailedSibling = name
				return e
			}
		case !st.Failed && tr.IsLeader():
			// A dead leader explains the kill better than a failure.
			why = "dead leader " + tr.Name()
			reason = func() *structs.TaskEvent { return newEvent(structs.TaskLeaderDead, now) }
		}
	}
	if reason == nil && hasSidecar && !liveNonSidecar {
		why = "main tasks dead"
		reason = func() *structs.TaskEvent {
			e := newEvent(structs.TaskMainDead, now)
			e.DisplayMessage = "Main tasks in the group died"
			return e
		}
	}
	if reason == nil {
		return
	}
	ar.autoKilled = true
	ar.logger.Debug("killing the group's other tasks", "reason", why)
	go ar.killTasks(reason)
}

// killTasks kills every task in upstream's order: the leader first (which
// gives the other tasks, log shippers and proxies, the leader's last
// moments), then the other tasks but sidecars, then the sidecars, which
// serve them to the end. Poststop tasks are not killed: they run once the
// others are dead, unless the runner is being destroyed. reason, if not
// nil, makes the event recorded on each task before its kill. It returns
// once every task but the sidecars and poststop tasks is dead.
func (ar *AllocRunner) killTasks(reason func() *structs.TaskEvent) {
	ar.killTasksWith(func(tr *TaskRunner) {
		var e *structs.TaskEvent
		if reason != nil {
			e = reason()
		}
		tr.Kill(e)
	})
}

// killTasksWith applies kill to every task in killTasks' order.
func (ar *AllocRunner) killTasksWith(kill func(tr *TaskRunner)) {
	waves := []func(tr *TaskRunner) bool{
		func(tr *TaskRunner) bool { return tr.IsLeader() },
		func(tr *TaskRunner) bool { return !tr.IsLeader() && !tr.task.IsSidecar() && !tr.task.IsPoststop() },
		func(tr *TaskRunner) bool { return !tr.IsLeader() && tr.task.IsSidecar() && !tr.task.IsPoststop() },
	}
	if ar.destroying.Load() {
		waves = append(waves, func(tr *TaskRunner) bool { return !tr.IsLeader() && tr.task.IsPoststop() })
	}
	for i, in := range waves {
		select {
		case <-ar.shutdownCh:
			// The client is going away and leaves the tasks running:
			// the wave before returned for that, not because it died.
			return
		default:
		}
		var killed []*TaskRunner
		for _, tr := range ar.tasks {
			if in(tr) {
				kill(tr)
				killed = append(killed, tr)
			}
		}
		if i == len(waves)-1 {
			return // the last wave is not waited for
		}
		for _, tr := range killed {
			<-tr.WaitCh()
		}
	}
}

// skipShutdownDelay reports whether the servers' latest copy of the
// allocation asks to skip shutdown_delay (alloc stop -no-shutdown-delay),
// or the runner is being destroyed.
func (ar *AllocRunner) skipShutdownDelay() bool {
	if ar.destroying.Load() {
		return true
	}
	ar.mu.RLock()
	defer ar.mu.RUnlock()
	return ar.alloc.DesiredTransition.ShouldIgnoreShutdownDelay()
}

// waitGroupShutdownDelay waits the group's shutdown_delay, on the runner's
// clock, between the servers' stop and the tasks' kill signals, unless the
// stop asked to skip it; each task then waits its own (upstream's order).
// It reports false when the runner is shutting down meanwhile: the tasks
// are left running for the next client to re-attach.
func (ar *AllocRunner) waitGroupShutdownDelay() bool {
	ar.mu.RLock()
	tg := ar.alloc.LookupTaskGroup()
	skip := ar.alloc.DesiredTransition.ShouldIgnoreShutdownDelay()
	ar.mu.RUnlock()
	if tg == nil || tg.ShutdownDelay == nil || *tg.ShutdownDelay <= 0 {
		return true
	}
	delay := *tg.ShutdownDelay
	if skip {
		ar.logger.Debug("skipping the group's shutdown_delay", "shutdown_delay", delay)
		return true
	}
	ar.logger.Debug("waiting the group's shutdown_delay before killing the tasks", "shutdown_delay", delay)
	t := ar.clock.NewTimer(delay)
	defer t.Stop()
	select {
	case <-t.C():
	case <-ar.skipDelayCh:
		ar.logger.Debug("the group's shutdown_delay cut short by a stop that skips it")
	case <-ar.shutdownCh:
		return false
	}
	return true
}

// taskShutdownDelay returns task's shutdown_delay in the job version the
// allocation runs now, as upstream reads it at the kill: an in-place
// update may have changed it since the task started.
func (ar *AllocRunner) taskShutdownDelay(task *structs.Task) time.Duration {
	ar.mu.RLock()
	defer ar.mu.RUnlock()
	if tg := ar.alloc.LookupTaskGroup(); tg != nil {
		if t := tg.LookupTask(task.Name); t != nil {
			return t.ShutdownDelay
		}
	}
	return task.ShutdownDelay
}

// cutShutdownDelays ends the shutdown delays being waited, for good.
func (ar *AllocRunner) cutShutdownDelays() {
	ar.skipDelayOnce.Do(func() { close(ar.skipDelayCh) })
}

// serverStopped reports whether the servers' latest copy of the allocation
// is desired stop or evict.
func (ar *AllocRunner) serverStopped() bool {
	ar.mu.RLock()
	defer ar.mu.RUnlock()
	return ar.alloc.ServerTerminalStatus()
}

// StopOnClientAfter returns the stop_on_client_after of the allocation's
// group in the job version it runs (an in-place update may change it);
// zero when the group has none.
func (ar *AllocRunner) StopOnClientAfter() time.Duration {
	ar.mu.RLock()
	defer ar.mu.RUnlock()
	return ar.alloc.LookupTaskGroup().StopOnClientAfter()
}

// Stop kills the tasks as a server stop does (leader first, each with its
// kill signal and kill timeout), for a decision the client takes on its own:
// why is recorded on each task's kill event, so that the allocation's
// history explains a stop no server asked for. The allocation then
// completes and is reported like any other change. Stop reports whether it
// stopped anything: false when the servers already stopped the allocation,
// its tasks are all dead, or an earlier Stop did it. It does not wait.
func (ar *AllocRunner) Stop(why string) bool {
	ar.mu.RLock()
	serverStopped := ar.alloc.ServerTerminalStatus()
	ar.mu.RUnlock()
	if serverStopped || ar.allTasksDead() || !ar.selfStopped.CompareAndSwap(false, true) {
		return false
	}
	ar.logger.Info("stopping allocation on the client's own decision", "reason", why)
	go ar.killTasksWith(func(tr *TaskRunner) { tr.KillBecause(why) })
	return true
}

// allTasksDead reports whether every task runner has returned.
func (ar *AllocRunner) allTasksDead() bool {
	for _, tr := range ar.tasks {
		select {
		case <-tr.WaitCh():
		default:
			return false
		}
	}
	return true
}

// Update hands the runner a newer version of its allocation from the
// server. A stop or evict kills the tasks. An allocation the server marked
// unknown while the client was away gets a Reconnected event on each task
// and its true state reported at once; nothing is restarted. Update does
// not block: the client calls it for every changed allocation in turn.
func (ar *AllocRunner) Update(alloc *structs.Allocation) {
	ar.mu.Lock()
	wasStopped := ar.alloc.ServerTerminalStatus()
	reconnected := newDisconnect(ar.alloc, alloc)
	joined := alloc.DeploymentID != "" && alloc.DeploymentID != ar.alloc.DeploymentID
	ar.alloc = alloc
	ar.mu.Unlock()
	if alloc.DesiredTransition.ShouldIgnoreShutdownDelay() {
		ar.cutShutdownDelays()
	}

	stop := alloc.ServerTerminalStatus() && !wasStopped && ar.started.Load()
	if joined && !stop && ar.started.Load() {
		// An in-place update moved it into a deployment: judge its health.
		go ar.requestUpdate()
	}
	if !stop && ar.started.Load() {
		// An in-place update may change the services (tags, a new one).
		ar.services.observe(alloc, ar.ClientStatus())
	}
	if !reconnected && !stop {
		return
	}
	go func() {
		if reconnected {
			now := ar.clock.Now()
			for _, tr := range ar.tasks {
				tr.EmitEvent(newEvent(structs.TaskClientReconnected, now))
			}
			ar.requestUpdate()
		}
		if stop {
			ar.logger.Debug("allocation stopped by the server", "desired_status", alloc.DesiredStatus)
			ar.services.deregister()
			if !ar.waitGroupShutdownDelay() {
				return
			}
			ar.killTasks(nil)
		}
	}()
}

// newDisconnect reports whether next, from the server, says the allocation
// went unknown in a disconnect that old did not know of. One Reconnected
// event per return, even if the server changes the allocation again before
// it hears the client's report; and one for every return, although the
// client's own reports never reach its copy of the allocation (they do not
// move AllocModifyIndex), so old may still say unknown from the last one.
func newDisconnect(old, next *structs.Allocation) bool {
	if next.ClientStatus != structs.AllocClientStatusUnknown {
		return false
	}
	if old.ClientStatus != structs.AllocClientStatusUnknown {
		return true
	}
	was, _ := old.UnknownSince()
	since, ok := next.UnknownSince()
	return ok && !since.Equal(was)
}

// Shutdown stops the runner and leaves the tasks running, for a client that
// is going away; a new client re-attaches to them from the state database.
// It waits for the runner's goroutines.
func (ar *AllocRunner) Shutdown() {
	ar.shutdownOnce.Do(func() {
		close(ar.shutdownCh)
		ar.services.shutdown()
		ar.checks.stop()
		for _, tr := range ar.tasks {
			tr.Shutdown()
		}
	})
	if ar.started.Load() {
		<-ar.waitCh
	}
}

// Destroy kills the tasks, waits for them, and removes the allocation's
// directory and persisted records. Run must have been called.
func (ar *AllocRunner) Destroy() {
	ar.destroyOnce.Do(func() {
		ar.destroying.Store(true)
		ar.cutShutdownDelays()
		ar.killTasks(nil)
		<-ar.waitCh
		// The instances' deregistration had its attempt; the servers
		// drop them with the allocation's terminal status anyway.
		ar.services.shutdown()
		ar.network.teardown()
		if err := ar.allocDir.Destroy(); err != nil {
			ar.logger.Warn("failed to remove alloc dir", "error", err)
		}
		if err := ar.db.DeleteAllocation(ar.id); err != nil {
			ar.logger.Warn("failed to delete allocation state", "error", err)
		}
		close(ar.destroyCh)
	})
	<-ar.destroyCh
}
