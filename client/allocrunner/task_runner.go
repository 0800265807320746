package allocrunner

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/nomad-edge/nomad/client/allocnet"
	"github.com/nomad-edge/nomad/client/getter"
	"github.com/nomad-edge/nomad/client/state"
	"github.com/nomad-edge/nomad/drivers"
	"github.com/nomad-edge/nomad/helper/clock"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// errWaitClosed is the exit error when a driver closes a wait channel
// without a result, which it only does when the wait was cancelled.
var errWaitClosed = errors.New("driver closed the wait channel without an exit result")

// taskRunnerConfig is what an AllocRunner gives each of its TaskRunners.
type taskRunnerConfig struct {
	logger   hclog.Logger
	clock    clock.Clock
	alloc    *structs.Allocation
	task     *structs.Task
	allocDir *AllocDir
	node     NodeInfo
	driver   drivers.Driver // nil when driverErr is set
	// driverErr explains why the task's driver is unavailable; the task
	// fails at its first start.
	driverErr error
	db        state.StateDB
	// notify is called after every state change, on the goroutine that
	// made it; it must not block.
	notify func()
	// maxKill caps the task's kill_timeout; zero means no cap.
	maxKill time.Duration
	// adopt asks the driver for a task left running by an earlier client
	// before the first start (the client lost its state database).
	adopt bool
	// adoptWhy is the reason an adoption's event gives; running is
	// Config.TaskRunning.
	adoptWhy string
	running  func(allocID, task string)
	notFound func(allocID, task string) string
	// gate holds back the starts of a restored task that did not
	// survive the client's restart (see offlineGate).
	gate *offlineGate
	// skipDelay reports whether the stop asked to skip shutdown_delay
	// (the servers' latest copy of the allocation says so); nil: never.
	skipDelay func() bool
	// cutDelay is closed when a delay being waited is to end at once (a
	// later stop skips it, or the runner is destroyed); nil: never.
	cutDelay <-chan struct{}
	// shutdownDelay returns the task's shutdown_delay in the job version
	// the allocation runs now (an in-place update may change it); nil:
	// the task's own.
	shutdownDelay func() time.Duration
	// users is the client's user.denylist, checked before every start.
	users UserPolicy
	// artifacts fetches the task's artifacts; nil: one without a cache.
	artifacts *getter.Getter
	// lifecycle holds every start back until the task's lifecycle stage
	// is open (lifecycle.go).
	lifecycle *coordinator
	// identities signs the task's workload identity (identity_hook.go).
	identities IdentitySigner
	// templates gives the task's templates their data (template_hook.go).
	templates TemplateSources
	// network is the allocation's network hook: its status, set before
	// the task runs, puts the task in a bridge-mode namespace.
	network *networkHook
}

// TaskRunner runs one task of an allocation. Run owns every driver call for
// the task (start, wait, stop, destroy), so no two of them race; Kill,
// Shutdown and EmitEvent only signal it or annotate its state.
type TaskRunner struct {
	logger   hclog.Logger
	clock    clock.Clock
	alloc    *structs.Allocation
	task     *structs.Task
	taskID   string
	allocDir *AllocDir
	dir      TaskDir
	node     NodeInfo
	driver   drivers.Driver
	driveErr error
	maxKill  time.Duration
	adopt    bool
	adoptWhy string
	// onRunning is called once, the first time the task runs (see
	// Config.TaskRunning); ranOnce records that it was.
	onRunning func(allocID, task string)
	ranOnce   bool
	// notAdopted is Config.NotAdopted.
	notAdopted func(allocID, task string) string
	db         state.StateDB
	notify     func()
	restarts   *RestartTracker
	gate       *offlineGate
	// skipDelay and cutDelay are taskRunnerConfig's.
	skipDelay     func() bool
	cutDelay      <-chan struct{}
	shutdownDelay func() time.Duration
	users         UserPolicy
	lifecycle     *coordinator
	identity      *identityHook
	// named holds the task's named identities, one hook each.
	named     []*identityHook
	network   *networkHook // nil in tests that build a runner alone
	templates *templateHook
	// restored is set when an earlier client process persisted the task.
	restored bool

	// persistMu serialises state changes with their writes, so that the
	// database never ends up holding an older state than memory.
	persistMu sync.Mutex
	mu        sync.Mutex
	state     *structs.TaskState
	handle    *drivers.TaskHandle
	setupDone bool
	// killReason is why the task is being killed, for kills that have no
	// event of their own (KillBecause); set before killCh closes.
	killReason string
	// killEvent is the Killing event a Kill brought, recorded in place
	// of the runner's own when the task is stopped; one that FailsTask
	// leaves the task failed (a change_script with fail_on_error). Set
	// before killCh closes.
	killEvent *structs.TaskEvent

	killCh       chan struct{}
	killOnce     sync.Once
	shutdownCh   chan struct{}
	shutdownOnce sync.Once
	waitCh       chan struct{} // closed when Run returns
	// restartCh asks Run to restart the running task (Restart,
	// restartUnhealthy); it holds at most one request. restartReq is
	// the one Run took, owned by Run's goroutine.
	restartCh  chan restartRequest
	restartReq restartRequest
	// logs rotates the task's output, when its driver allows (logs.go).
	logs *taskLogs
	// artifacts and artifactsDone: see fetchArtifacts.
	artifacts     *getter.Getter
	artifactsDone bool
	// artifactsGot counts the artifacts fetched so far, in order: a
	// retry after a failure resumes with the one that failed.
	artifactsGot int
}

func newTaskRunner(cfg taskRunnerConfig) *TaskRunner {
	tr := &TaskRunner{
		logger:        cfg.logger.With("task", cfg.task.Name),
		clock:         cfg.clock,
		alloc:         cfg.alloc,
		task:          cfg.task,
		taskID:        cfg.alloc.ID + "/" + cfg.task.Name,
		allocDir:      cfg.allocDir,
		dir:           cfg.allocDir.TaskDir(cfg.task.Name),
		node:          cfg.node,
		driver:        cfg.driver,
		driveErr:      cfg.driverErr,
		db:            cfg.db,
		notify:        cfg.notify,
		maxKill:       cfg.maxKill,
		adopt:         cfg.adopt,
		adoptWhy:      cfg.adoptWhy,
		onRunning:     cfg.running,
		notAdopted:    cfg.notFound,
		gate:          cfg.gate,
		skipDelay:     cfg.skipDelay,
		cutDelay:      cfg.cutDelay,
		shutdownDelay: cfg.shutdownDelay,
		users:         cfg.users,
		lifecycle:     cfg.lifecycle,
		artifacts:     cfg.artifacts,
		identity:      newIdentityHook(cfg),
		named:         newNamedIdentityHooks(cfg),
		network:       cfg.network,
		restarts:      NewRestartTracker(taskRestartPolicy(cfg.alloc, cfg.task), jobType(cfg.alloc), cfg.task.Lifecycle),
		state:         &structs.TaskState{State: structs.TaskStatePending},
		killCh:        make(chan struct{}),
		shutdownCh:    make(chan struct{}),
		waitCh:        make(chan struct{}),
		restartCh:     make(chan restartRequest, 1),
	}
	tr.templates = newTemplateHook(tr, cfg.templates)
	tr.identity.renewed = tr.identityRenewed
	for _, h := range tr.named {
		h.renewed = tr.identityRenewed
	}
	return tr
}

func taskRestartPolicy(alloc *structs.Allocation, task *structs.Task) *structs.RestartPolicy {
	if task.RestartPolicy != nil {
		return task.RestartPolicy
	}
	if tg := alloc.LookupTaskGroup(); tg != nil {
		return tg.RestartPolicy
	}
	return nil
}

func jobType(alloc *structs.Allocation) string {
	if alloc.Job == nil {
		return structs.JobTypeService
	}
	return alloc.Job.Type
}

// restore loads what an earlier client process persisted. It must be called
// before Run.
func (tr *TaskRunner) restore(rec *state.TaskRecord) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.restored = true
	if rec.State != nil {
		tr.state = rec.State.Copy()
		tr.setupDone = true
		// A task that started has its artifacts in its directory.
		tr.artifactsDone = !rec.State.StartedAt.IsZero()
	}
	tr.handle = rec.Handle.Copy()
	if rec.Dropped != nil {
		tr.logger.Warn("restoring the task without some of its kept data", "error", rec.Dropped)
	}
	tr.identity.restore(rec.Identity)
	for _, h := range tr.named {
		h.restore(rec.NamedIdentities[h.name])
	}
	tr.templates.restoreData(rec.TemplateData)
}

// Name returns the task's name.
func (tr *TaskRunner) Name() string { return tr.task.Name }

// IsLeader reports whether the task is its group's leader.
func (tr *TaskRunner) IsLeader() bool { return tr.task.Leader }

// State returns a copy of the task's state.
func (tr *TaskRunner) State() *structs.TaskState {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return tr.state.Copy()
}

// WaitCh is closed when Run has returned: the task is dead, or the runner
// was shut down.
func (tr *TaskRunner) WaitCh() <-chan struct{} { return tr.waitCh }

// EmitEvent records an event on the task.
func (tr *TaskRunner) EmitEvent(e *structs.TaskEvent) {
	tr.update(func(st *structs.TaskState) { appendEvent(st, e) })
}

// Kill tells the task to stop: it is sent its kill signal, then killed after
// its kill timeout, and stays dead. reason, if not nil, is recorded first
// (why the task is being killed). Kill does not wait; see WaitCh.
func (tr *TaskRunner) Kill(reason *structs.TaskEvent) { tr.kill(reason, "") }

// KillBecause is Kill for a decision that has no event type of its own:
// why becomes the KillReason of the task's Killing event, or of its Killed
// event when the task was not running, so that the task's history says
// who stopped it and why. Only the first Kill or KillBecause counts.
func (tr *TaskRunner) KillBecause(why string) { tr.kill(nil, why) }

func (tr *TaskRunner) kill(reason *structs.TaskEvent, why string) {
	tr.killOnce.Do(func() {
		select {
		case <-tr.waitCh:
			return // already dead: nothing to explain
		default:
		}
		// Dead but Run not yet returned: the task that failed and made
		// its group kill the others is one of them, and must not be
		// told that a sibling failed.
		tr.mu.Lock()
		dead := tr.state.State == structs.TaskStateDead
		tr.mu.Unlock()
		if dead {
			return
		}
		if reason != nil && reason.Type != structs.TaskKilling {
			tr.EmitEvent(reason)
		}
		tr.mu.Lock()
		tr.killReason = why
		if reason != nil && reason.Type == structs.TaskKilling {
			tr.killEvent = reason
		}
		tr.mu.Unlock()
		close(tr.killCh)
	})
}

// reasonForKill returns what KillBecause recorded, if anything.
func (tr *TaskRunner) reasonForKill() string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return tr.killReason
}

// Shutdown stops the runner and leaves the task running, for a client that
// is going away and will re-attach when it comes back. It does not wait.
func (tr *TaskRunner) Shutdown() {
	tr.shutdownOnce.Do(func() { close(tr.shutdownCh) })
}

// update applies fn to the state, persists the result and tells the alloc
// runner.
func (tr *TaskRunner) update(fn func(st *structs.TaskState)) {
	tr.persistMu.Lock()
	defer tr.persistMu.Unlock()
	tr.mu.Lock()
	fn(tr.state)
	st := tr.state.Copy()
	tr.mu.Unlock()
	if err := tr.db.PutTaskState(tr.alloc.ID, tr.task.Name, st); err != nil {
		tr.logger.Error("failed to persist task state", "error", err)
	}
	tr.notify()
}

// setHandle records (or, with nil, forgets) the driver handle.
func (tr *TaskRunner) setHandle(h *drivers.TaskHandle) {
	tr.persistMu.Lock()
	defer tr.persistMu.Unlock()
	tr.mu.Lock()
	tr.handle = h
	tr.mu.Unlock()
	if err := tr.db.PutTaskHandle(tr.alloc.ID, tr.task.Name, h); err != nil {
		tr.logger.Error("failed to persist task handle", "error", err)
	}
}

func (tr *TaskRunner) killed() bool {
	select {
	case <-tr.killCh:
		return true
	default:
		return false
	}
}

func (tr *TaskRunner) shuttingDown() bool {
	select {
	case <-tr.shutdownCh:
		return true
	default:
		return false
	}
}

// Run runs the task until it is dead for good or the runner is shut down.
// A restored runner with a live handle re-attaches instead of starting.
func (tr *TaskRunner) Run() {
	defer close(tr.waitCh)
	defer tr.identity.stop()
	for _, h := range tr.named {
		defer h.stop()
	}
	defer tr.templates.stop()
	tr.startLogs()
	defer tr.stopLogs()

	tr.mu.Lock()
	dead := tr.state.State == structs.TaskStateDead
	handle := tr.handle
	tr.mu.Unlock()
	if dead {
		return
	}

	running := false
	if handle != nil {
		var more bool
		if running, more = tr.recover(handle); !more {
			return
		}
		if running {
			tr.templates.resume()
			tr.runningOnce()
		}
	} else if res, ok := undecidedExit(tr.State()); ok && tr.restored {
		// The earlier client recorded the exit but stopped before its
		// restart decision: decide now, so that a task that completed
		// (an ephemeral prestart task) is not started again.
		if !tr.handleDecision(tr.restarts.OnExit(res, tr.clock.Now())) {
			return
		}
	}
	// A restored task that is not running did not survive the client's
	// restart: its next starts pass the gate until the servers answer.
	gated := tr.restored && !running && tr.gate != nil
	for {
		if !running {
			offline := false
			if gated {
				var ok bool
				ok, offline = tr.gate.wait(tr.killCh, tr.shutdownCh)
				gated = !ok || offline
			}
			tr.waitTurn()
			if tr.shuttingDown() {
				return
			}
			if tr.killed() {
				tr.markKilled(nil, tr.reasonForKill())
				return
			}
			if err := tr.start(); err != nil {
				d := tr.restarts.OnStartError(err, tr.clock.Now())
				if !tr.handleDecision(d) {
					return
				}
				continue
			}
			if offline {
				tr.restartedOffline()
			}
			tr.runningOnce()
		}
		running = false

		res, outcome := tr.wait()
		switch outcome {
		case waitShutdown:
			return
		case waitKilled:
			if tr.waitShutdownDelay() {
				tr.stopAndMarkKilled()
			}
			return
		case waitRestart:
			if !tr.stopForRestart() {
				return
			}
			continue
		}
		tr.exited(res)
		if tr.killed() {
			tr.markKilled(nil, tr.reasonForKill())
			return
		}
		if !tr.handleDecision(tr.restarts.OnExit(res, tr.clock.Now())) {
			return
		}
	}
}

// runningOnce calls the running hook the first time the task runs under
// this runner. Only the Run goroutine calls it.
func (tr *TaskRunner) runningOnce() {
	if tr.ranOnce || tr.onRunning == nil {
		return
	}
	tr.ranOnce = true
	tr.onRunning(tr.alloc.ID, tr.task.Name)
}

// undecidedExit returns the exit a persisted state ends with when no
// restart decision followed it: the task is not dead and its last event is
// its Terminated.
func undecidedExit(st *structs.TaskState) (*drivers.ExitResult, bool) {
	n := len(st.Events)
	if st.State == structs.TaskStateDead || n == 0 || st.Events[n-1].Type != structs.TaskTerminated {
		return nil, false
	}
	e := st.Events[n-1]
	res := &drivers.ExitResult{ExitCode: e.ExitCode, Signal: e.Signal}
	if e.Message != "" {
		res.Err = errors.New(e.Message) // OOM killed, or the driver's error
	}
	return res, true
}

// waitTurn waits until the task's lifecycle stage lets it start, or it is
// killed, or the runner shuts down.
func (tr *TaskRunner) waitTurn() {
	if tr.lifecycle == nil {
		return
	}
	select {
	case <-tr.lifecycle.wait(tr.task.Name):
	case <-tr.killCh:
	case <-tr.shutdownCh:
	}
}

// restartedOffline records a start made before any server answered.
func (tr *TaskRunner) restartedOffline() {
	now := tr.clock.Now()
	left := tr.gate.offlineLeft(now)
	tr.logger.Info("restarted task without reaching a server: its group's disconnect window allows it",
		"window_left", left)
	tr.EmitEvent(restartedOfflineEvent(now, left, tr.gate.window))
}

// recover re-attaches to a task a previous client process started. running
// reports success; more is false when the task is dead for good.
func (tr *TaskRunner) recover(h *drivers.TaskHandle) (running, more bool) {
	err := tr.driveErr
	if err == nil {
		err = tr.driver.RecoverTask(h)
	}
	if err == nil {
		tr.logger.Debug("re-attached to task")
		// A client that stopped between starting the task and recording
		// it running left the state behind the task.
		if tr.State().State != structs.TaskStateRunning {
			started := h.StartedAt
			tr.update(func(st *structs.TaskState) {
				st.State = structs.TaskStateRunning
				st.StartedAt = started.UTC()
			})
		}
		return true, true
	}
	tr.logger.Warn("failed to re-attach to task", "error", err)
	tr.setHandle(nil)
	e := newEvent(structs.TaskRestoreFailed, tr.clock.Now())
	e.Message = fmt.Sprintf("failed to restore task: %v", err)
	e.DisplayMessage = e.Message
	tr.EmitEvent(e)
	// The task is gone (or unreachable) while it should be running: that
	// is a failure, with the restart budget of any other.
	d := tr.restarts.OnExit(&drivers.ExitResult{Err: err}, tr.clock.Now())
	return false, tr.handleDecision(d)
}

// start starts the task and records its handle.
// findOrphan asks the driver for a task an earlier client process started
// for this allocation and task, when the client lost the state that named
// it. It returns nil when there is none or the driver cannot look.
func (tr *TaskRunner) findOrphan() *drivers.TaskHandle {
	finder, ok := tr.driver.(drivers.TaskFinder)
	if !ok {
		return nil
	}
	h, err := finder.FindTask(tr.taskConfig())
	if err != nil {
		if !errors.Is(err, drivers.ErrTaskNotFound) {
			tr.logger.Warn("looking for a task left running by an earlier client", "error", err)
		}
		return nil
	}
	tr.logger.Info("re-attached to a task left running by an earlier client")
	return h
}

// adoptedStart is the start time of a task found running after the client
// lost its state: the one the servers hold for the task (known, from the
// allocation they sent) when it names the run that was found, else the
// driver's (derived from the process table, to the kernel's 10 ms tick).
// The client records a start once StartTask has returned, so the run the
// servers know did not start after that record, and a later run started
// after it: a derived start at most startLatency before the recorded one
// (and no more than a tick after it) is that run.
func adoptedStart(found time.Time, known *structs.TaskState) time.Time {
	if known == nil || known.State != structs.TaskStateRunning || known.StartedAt.IsZero() {
		return found
	}
	// A derived start is truncated to the tick; the slack allows for that
	// and for the two clocks the boot time is read from.
	const tick, startLatency = 10*time.Millisecond + time.Millisecond, time.Minute
	lead := known.StartedAt.Sub(found)
	if lead < -tick || lead > startLatency {
		return found
	}
	return known.StartedAt
}

func (tr *TaskRunner) start() error {
	now := tr.clock.Now()
	tr.mu.Lock()
	firstStart := !tr.setupDone
	tr.setupDone = true
	tr.mu.Unlock()
	if firstStart {
		e := newEvent(structs.TaskSetup, now)
		e.Message = "Building Task Directory"
		tr.EmitEvent(e)
	}

	if err := tr.users.check(tr.task.Driver, tr.task.User); err != nil {
		// As upstream: the task fails validation and is not restarted;
		// no restart could change the answer.
		e := newEvent(structs.TaskFailedValidation, now)
		e.ValidationError = err.Error()
		e.FailsTask = true
		tr.EmitEvent(e)
		return drivers.NewRecoverableError(err, false)
	}
	err := tr.driveErr
	if err == nil {
		err = writeDispatchPayload(tr.dir.LocalDir, tr.alloc.Job, tr.task)
	}
	var h *drivers.TaskHandle
	if err == nil && firstStart && tr.adopt {
		if h = tr.findOrphan(); h != nil {
			tr.setHandle(h)
			startedAt := adoptedStart(h.StartedAt, tr.alloc.TaskStates[tr.task.Name])
			tr.update(func(st *structs.TaskState) {
				st.State = structs.TaskStateRunning
				st.StartedAt = startedAt.UTC()
				e := newEvent(structs.TaskStarted, tr.clock.Now())
				why := tr.adoptWhy
				if why == "" {
					why = "its state was lost"
				}
				e.Message = fmt.Sprintf("Re-attached to the task an earlier client left running (%s)", why)
				e.DisplayMessage = e.Message
				appendEvent(st, e)
			})
			return nil
		}
		if tr.notAdopted != nil {
			if msg := tr.notAdopted(tr.alloc.ID, tr.task.Name); msg != "" {
				e := newEvent(structs.TaskRestoreFailed, tr.clock.Now())
				e.Message, e.DisplayMessage = msg, msg
				tr.EmitEvent(e)
			}
		}
	}
	if err == nil {
		if err := tr.checkVolumeMounts(); err != nil {
			return err
		}
		if err := tr.identity.prestart(); err != nil {
			return tr.setupFailed(err)
		}
		for _, h := range tr.named {
			if err := h.prestart(); err != nil {
				return tr.setupFailed(fmt.Errorf("identity %q: %w", h.name, err))
			}
		}
		if err := tr.fetchArtifacts(); err != nil {
			return err
		}
		if err := tr.templates.prestart(); err != nil {
			return tr.setupFailed(err)
		}
		tr.clearRestart()
		cfg := tr.taskConfig()
		h, err = tr.driver.StartTask(cfg)
		if errors.Is(err, drivers.ErrTaskExists) {
			// Left over from an attempt whose exit we did not see
			// through: it is ours to replace.
			tr.logger.Warn("driver still tracks the task; destroying it before starting again")
			_ = tr.driver.DestroyTask(tr.taskID, true)
			h, err = tr.driver.StartTask(cfg)
		}
	}
	if err != nil {
		tr.logger.Warn("failed to start task", "error", err)
		e := newEvent(structs.TaskDriverFailure, tr.clock.Now())
		e.DriverError = err.Error()
		tr.EmitEvent(e)
		return err
	}

	tr.setHandle(h)
	started := tr.clock.Now()
	tr.update(func(st *structs.TaskState) {
		st.State = structs.TaskStateRunning
		st.StartedAt = started.UTC()
		st.FinishedAt = time.Time{}
		appendEvent(st, newEvent(structs.TaskStarted, started))
	})
	return nil
}

func (tr *TaskRunner) taskConfig() *drivers.TaskConfig {
	groupName, jobName := tr.alloc.TaskGroup, tr.alloc.JobID
	if tr.alloc.Job != nil {
		jobName = tr.alloc.Job.Name
	}
	ad, td := tr.allocDir, tr.dir
	if fs := drivers.CapabilitiesOf(tr.driver).FSIsolation; fs == drivers.FSIsolationChroot || fs == drivers.FSIsolationImage {
		// The task's environment and config name the paths it sees.
		ad, td = ad.inChroot(), td.inChroot()
	}
	env := buildEnv(tr.envInput(ad, td))
	tr.identity.setEnv(env)
	for _, h := range tr.named {
		h.setEnv(env)
	}
	tr.templates.setEnv(env)
	stdout, stderr := tr.logPaths()
	cfg := &drivers.TaskConfig{
		ID:            tr.taskID,
		Name:          tr.task.Name,
		AllocID:       tr.alloc.ID,
		JobName:       jobName,
		TaskGroupName: groupName,
		Env:           env,
		Config:        interpolateConfig(tr.task.Config, env, tr.node),
		User:          tr.task.User,
		TaskDir:       tr.dir.Dir,
		LocalDir:      tr.dir.LocalDir,
		SecretsDir:    tr.dir.SecretsDir,
		AllocDir:      tr.allocDir.SharedDir,
		StdoutPath:    stdout,
		StderrPath:    stderr,
		Resources:     taskResources(tr.alloc, tr.task),
		Ports:         taskPorts(tr.alloc),
		Mounts:        tr.volumeMountsOrNone(),
		Events:        tr.driverMessage,
		NetNSPath:     tr.netnsPath(),
	}
	if n := tr.network; n != nil {
		cfg.ResolvConfPath, cfg.HostsPath, cfg.Hostname = n.resolvConf, n.hosts, n.hostname
	}
	return cfg
}

// bridge is the allocation's bridge network; nil in host mode.
func (tr *TaskRunner) bridge() *allocnet.Status {
	if tr.network == nil {
		return nil
	}
	return tr.network.status
}

func (tr *TaskRunner) netnsPath() string {
	if b := tr.bridge(); b != nil {
		return b.NetnsPath
	}
	return ""
}

// envInput is the input of the task's environment, with the allocation
// directory and task directory the caller wants named.
func (tr *TaskRunner) envInput(ad *AllocDir, td TaskDir) envInput {
	return envInput{alloc: tr.alloc, task: tr.task, allocDir: ad, taskDir: td, node: tr.node, net: tr.bridge()}
}

// driverMessage records a driver's progress message ("Downloading image")
// as a Driver event, as upstream shows them in alloc status.
func (tr *TaskRunner) driverMessage(msg string) {
	e := newEvent(structs.TaskDriverMessage, tr.clock.Now())
	e.DriverMessage = msg
	e.DisplayMessage = msg
	tr.EmitEvent(e)
}

type waitOutcome int

const (
	waitExited waitOutcome = iota
	waitKilled
	waitShutdown
	waitRestart
)

// wait blocks until the task exits, is to be killed, or the runner shuts
// down.
func (tr *TaskRunner) wait() (*drivers.ExitResult, waitOutcome) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch, err := tr.driver.WaitTask(ctx, tr.taskID)
	if err != nil {
		return &drivers.ExitResult{Err: fmt.Errorf("waiting for task: %w", err)}, waitExited
	}
	select {
	case res, ok := <-ch:
		if !ok || res == nil {
			res = &drivers.ExitResult{Err: errWaitClosed}
		}
		return res, waitExited
	case <-tr.killCh:
		return nil, waitKilled
	case <-tr.shutdownCh:
		return nil, waitShutdown
	case tr.restartReq = <-tr.restartCh:
		return nil, waitRestart
	}
}

// exited records an exit and releases the driver's hold on the task.
func (tr *TaskRunner) exited(res *drivers.ExitResult) {
	tr.logger.Debug("task exited", "result", res)
	if err := tr.driver.DestroyTask(tr.taskID, false); err != nil && !errors.Is(err, drivers.ErrTaskNotFound) {
		tr.logger.Warn("failed to destroy exited task", "error", err)
	}
	tr.setHandle(nil)
	now := tr.clock.Now()
	tr.update(func(st *structs.TaskState) {
		appendEvent(st, terminatedEvent(res, now))
	})
}

// handleDecision applies a restart decision. It reports whether Run should
// start the task again.
func (tr *TaskRunner) handleDecision(d RestartDecision) bool {
	now := tr.clock.Now()
	if !d.Restart() {
		tr.update(func(st *structs.TaskState) {
			if d.Failed() {
				appendEvent(st, restartEvent(d, now))
				st.Failed = true
			}
			st.State = structs.TaskStateDead
			st.FinishedAt = now.UTC()
		})
		return false
	}
	tr.update(func(st *structs.TaskState) {
		appendEvent(st, restartEvent(d, now))
		st.State = structs.TaskStatePending
		st.Restarts++
		st.LastRestart = now.UTC()
	})
	t := tr.clock.NewTimer(d.Delay)
	defer t.Stop()
	select {
	case <-t.C():
		return true
	case <-tr.killCh:
		tr.markKilled(nil, tr.reasonForKill())
		return false
	case <-tr.shutdownCh:
		return false
	}
}

// waitShutdownDelay waits the task's shutdown_delay on the runner's clock
// before its kill signal, as upstream: a proxy or a load balancer gets the
// time to stop sending it work. A stop with NoShutdownDelay skips it, and
// says so in the task's events. It reports whether the task must still be
// stopped: false when the task exited meanwhile (its exit and the kill are
// recorded) or the runner is shutting down (the task is left running).
func (tr *TaskRunner) waitShutdownDelay() bool {
	delay := tr.task.ShutdownDelay
	if tr.shutdownDelay != nil {
		delay = tr.shutdownDelay()
	}
	if delay <= 0 {
		return true
	}
	if tr.skipDelay != nil && tr.skipDelay() {
		e := newEvent(structs.TaskSkippingShutdownDelay, tr.clock.Now())
		e.DisplayMessage = fmt.Sprintf("Skipping shutdown_delay of %s before killing the task.", delay)
		tr.EmitEvent(e)
		return true
	}
	e := newEvent(structs.TaskWaitingShuttingDownDelay, tr.clock.Now())
	e.DisplayMessage = fmt.Sprintf("Waiting for shutdown_delay of %s before killing the task.", delay)
	tr.EmitEvent(e)
	tr.logger.Debug("waiting before killing task", "shutdown_delay", delay)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch, err := tr.driver.WaitTask(ctx, tr.taskID)
	if err != nil {
		ch = nil // cannot watch it: wait the delay out regardless
	}
	t := tr.clock.NewTimer(delay)
	defer t.Stop()
	select {
	case <-t.C():
		return true
	case <-tr.cutDelay:
		tr.logger.Debug("shutdown_delay cut short by a stop that skips it")
		return true
	case res, ok := <-ch:
		if !ok || res == nil {
			res = &drivers.ExitResult{Err: errWaitClosed}
		}
		tr.exited(res)
		tr.markKilled(nil, tr.reasonForKill())
		return false
	case <-tr.shutdownCh:
		return false
	}
}

// stopAndMarkKilled stops the running task with its kill signal and timeout.
func (tr *TaskRunner) stopAndMarkKilled() {
	timeout := tr.killTimeout()
	tr.mu.Lock()
	e := tr.killEvent
	tr.mu.Unlock()
	if e == nil {
		e = newEvent(structs.TaskKilling, tr.clock.Now())
		e.KillReason = tr.reasonForKill()
	}
	e.KillTimeout = timeout
	tr.EmitEvent(e)

	stopErr := tr.driver.StopTask(tr.taskID, timeout, tr.task.KillSignal)
	if stopErr != nil {
		tr.logger.Error("failed to stop task", "error", stopErr)
	}
	if err := tr.driver.DestroyTask(tr.taskID, stopErr != nil); err != nil && !errors.Is(err, drivers.ErrTaskNotFound) {
		tr.logger.Warn("failed to destroy killed task", "error", err)
	}
	tr.setHandle(nil)
	tr.markKilled(stopErr, "")
}

// markKilled makes the task dead after a kill. A kill does not fail a task
// unless its Killing event says so (FailsTask): if it had failed before,
// it stays failed. why is the kill's reason when no Killing event carried
// it (the task was not running).
func (tr *TaskRunner) markKilled(killErr error, why string) {
	now := tr.clock.Now()
	tr.mu.Lock()
	fails := tr.killEvent != nil && tr.killEvent.FailsTask
	tr.mu.Unlock()
	tr.update(func(st *structs.TaskState) {
		if fails {
			st.Failed = true
		}
		e := newEvent(structs.TaskKilled, now)
		if killErr != nil {
			e.KillError = killErr.Error()
		}
		e.KillReason = why
		appendEvent(st, e)
		st.State = structs.TaskStateDead
		st.FinishedAt = now.UTC()
	})
}

// runSetupFailed stands in for Run when the allocation's directory could
// not be built: the task never starts and is dead and failed.
func (tr *TaskRunner) runSetupFailed(err error) {
	defer close(tr.waitCh)
	now := tr.clock.Now()
	tr.update(func(st *structs.TaskState) {
		e := newEvent(structs.TaskSetupFailure, now)
		e.SetupError = err.Error()
		e.FailsTask = true
		appendEvent(st, e)
		st.State = structs.TaskStateDead
		st.Failed = true
		st.FinishedAt = now.UTC()
	})
}
