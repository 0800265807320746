package allocrunner

import "github.com/nomad-edge/nomad/nomad/structs"

// Client descriptions paired with the derived client status.
const (
	descPending  = "No tasks have started"
	descRunning  = "Tasks are running"
	descComplete = "All tasks have completed"
	descFailed   = "Failed tasks"
)

// ClientStatus derives an allocation's client status from its tasks: failed
// as soon as one task failed; pending while any task is not yet (or, during
// a restart delay, not currently) running; running while all live tasks run;
// complete once every task is dead without failure.
func ClientStatus(states map[string]*structs.TaskState) (status, description string) {
	var pending, running, dead, failed bool
	for _, st := range states {
		switch st.State {
		case structs.TaskStateRunning:
			running = true
		case structs.TaskStateDead:
			if st.Failed {
				failed = true
			} else {
				dead = true
			}
		default:
			pending = true
		}
	}
	switch {
	case failed:
		return structs.AllocClientStatusFailed, descFailed
	case pending:
		return structs.AllocClientStatusPending, descPending
	case running:
		return structs.AllocClientStatusRunning, descRunning
	case dead:
		return structs.AllocClientStatusComplete, descComplete
	}
	return structs.AllocClientStatusPending, descPending
}
