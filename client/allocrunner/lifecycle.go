package allocrunner

import (
	"sync"

	"github.com/nomad-edge/nomad/nomad/structs"
)

// stage is where a task's lifecycle block puts it in its group's order.
// Main tasks with sidecar set start with the other main tasks, so the
// sidecar flag only splits the lifecycle stages.
type stage int

const (
	stagePrestart stage = iota
	stagePrestartSidecar
	stageMain
	stagePoststart
	stagePoststartSidecar
	stagePoststop
)

func taskStage(t *structs.Task) stage {
	switch {
	case t.IsPrestart() && t.IsSidecar():
		return stagePrestartSidecar
	case t.IsPrestart():
		return stagePrestart
	case t.IsPoststart() && t.IsSidecar():
		return stagePoststartSidecar
	case t.IsPoststart():
		return stagePoststart
	case t.IsPoststop():
		return stagePoststop
	}
	return stageMain
}

// phase is how far an allocation has got through its lifecycle. It only
// moves forward.
type phase int

const (
	// phasePrestart runs the prestart tasks; the main tasks wait until
	// every ephemeral prestart task has completed successfully and every
	// prestart sidecar runs.
	phasePrestart phase = iota
	// phaseMain starts the main tasks; poststart tasks wait until none of
	// them is pending any more.
	phaseMain
	// phasePoststart runs the poststart tasks beside the main ones.
	phasePoststart
	// phaseRunning follows the ephemeral poststart tasks' end: nothing new
	// starts, sidecars and main tasks restart per their policy.
	phaseRunning
	// phasePoststop follows the death of every other task, however it
	// came (its own end, a failure, a stop): only poststop tasks run.
	phasePoststop
)

// open lists the stages whose tasks may start (or restart) in each phase,
// upstream's order. An ephemeral task is let start only in its own phase:
// once it has completed it is not run again.
var open = map[phase][]stage{
	phasePrestart:  {stagePrestart, stagePrestartSidecar},
	phaseMain:      {stagePrestartSidecar, stageMain},
	phasePoststart: {stagePrestartSidecar, stageMain, stagePoststart, stagePoststartSidecar},
	phaseRunning:   {stagePrestartSidecar, stageMain, stagePoststartSidecar},
	phasePoststop:  {stagePoststop},
}

// coordinator holds each task's start back until its lifecycle stage is
// open: it is fed the tasks' states after every change (AllocRunner's
// updateState) and task runners wait on its gates before every start.
type coordinator struct {
	stages map[string]stage // by task name; fixed

	mu    sync.Mutex
	phase phase
	gates map[stage]*gate
}

func newCoordinator(tasks []*structs.Task) *coordinator {
	c := &coordinator{stages: make(map[string]stage, len(tasks)), gates: map[stage]*gate{}}
	for _, t := range tasks {
		st := taskStage(t)
		c.stages[t.Name] = st
		if c.gates[st] == nil {
			c.gates[st] = newGate()
		}
	}
	c.enterLocked(phasePrestart)
	return c
}

// wait returns a channel that is closed while the named task may start.
func (c *coordinator) wait(task string) <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gates[c.stages[task]].wait()
}

// update moves the phase as far as states allow. A restored allocation
// gets there in one call from what its tasks' persisted states say: a
// completed prestart task takes it past the prestart phase, so the task
// is not run again.
func (c *coordinator) update(states map[string]*structs.TaskState) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for {
		next := c.nextLocked(states)
		if next == c.phase {
			return
		}
		c.enterLocked(next)
	}
}

func (c *coordinator) current() phase {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.phase
}

func (c *coordinator) enterLocked(p phase) {
	c.phase = p
	allowed := map[stage]bool{}
	for _, st := range open[p] {
		allowed[st] = true
	}
	for st, g := range c.gates {
		g.set(allowed[st])
	}
}

// nextLocked is the phase that follows the current one given states; the
// current one when its condition does not hold yet.
func (c *coordinator) nextLocked(states map[string]*structs.TaskState) phase {
	if c.allDead(states, func(st stage) bool { return st != stagePoststop }) {
		return phasePoststop
	}
	switch c.phase {
	case phasePrestart:
		for name, st := range c.stages {
			s := states[name]
			switch {
			case st == stagePrestart && !s.Successful():
				return c.phase
			case st == stagePrestartSidecar && s.State != structs.TaskStateRunning:
				return c.phase
			}
		}
		return phaseMain
	case phaseMain:
		for name, st := range c.stages {
			if st == stageMain && states[name].State == structs.TaskStatePending {
				return c.phase
			}
		}
		return phasePoststart
	case phasePoststart:
		if c.allDead(states, func(st stage) bool { return st == stagePoststart }) {
			return phaseRunning
		}
	}
	return c.phase
}

// allDead reports whether every task of a stage sel selects is dead.
func (c *coordinator) allDead(states map[string]*structs.TaskState, sel func(stage) bool) bool {
	for name, st := range c.stages {
		if sel(st) && states[name].State != structs.TaskStateDead {
			return false
		}
	}
	return true
}

// statusStates are the states an allocation's client status and health
// are derived from. A poststop task waiting for its turn is left out: it
// would hold a running allocation at pending. For health, so is an
// ephemeral lifecycle task that completed: it did its job and will not
// run again.
func (c *coordinator) statusStates(states map[string]*structs.TaskState, forHealth bool) map[string]*structs.TaskState {
	out := make(map[string]*structs.TaskState, len(states))
	waiting := c.current() != phasePoststop
	for name, s := range states {
		st := c.stages[name]
		switch {
		case st == stagePoststop && (forHealth || (waiting && s.State == structs.TaskStatePending)):
			continue
		case forHealth && (st == stagePrestart || st == stagePoststart) && s.Successful():
			continue
		}
		out[name] = s
	}
	return out
}

// gate is a start permission that can be given and taken back: wait's
// channel is closed while it is open.
type gate struct {
	isOpen bool
	ch     chan struct{}
}

func newGate() *gate { return &gate{ch: make(chan struct{})} }

func (g *gate) wait() <-chan struct{} { return g.ch }

func (g *gate) set(isOpen bool) {
	switch {
	case isOpen && !g.isOpen:
		close(g.ch)
	case !isOpen && g.isOpen:
		g.ch = make(chan struct{})
	}
	g.isOpen = isOpen
}
