package allocrunner

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nomad-edge/nomad/drivers"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// MaxTaskEvents bounds the events kept on a task state: enough to explain
// the last restarts, small enough that a thousand allocations' updates stay
// cheap to send over a slow link.
const MaxTaskEvents = 10

// appendEvent adds e to st, dropping the oldest events beyond MaxTaskEvents.
func appendEvent(st *structs.TaskState, e *structs.TaskEvent) {
	if e.DisplayMessage == "" {
		e.DisplayMessage = displayMessage(e)
	}
	st.Events = append(st.Events, e)
	if over := len(st.Events) - MaxTaskEvents; over > 0 {
		st.Events = slices.Clone(st.Events[over:])
	}
}

// displayMessage is the one-line text `alloc status` shows for an event.
func displayMessage(e *structs.TaskEvent) string {
	switch e.Type {
	case structs.TaskReceived:
		return "Task received by client"
	case structs.TaskSetup:
		return e.Message
	case structs.TaskStarted:
		return "Task started by client"
	case structs.TaskTerminated:
		msg := fmt.Sprintf("Exit Code: %d", e.ExitCode)
		if e.Signal != 0 {
			msg += fmt.Sprintf(", Signal: %d", e.Signal)
		}
		if e.Message != "" {
			msg += ", Exit Message: " + e.Message
		}
		return msg
	case structs.TaskKilling:
		msg := fmt.Sprintf("Sent interrupt. Waiting %s before force killing", e.KillTimeout)
		if e.KillReason != "" {
			msg = e.KillReason + ". " + msg
		}
		return msg
	case structs.TaskKilled:
		switch {
		case e.KillError != "":
			return e.KillError
		case e.KillReason != "":
			return e.KillReason + ". Task killed"
		}
		return "Task successfully killed"
	case structs.TaskRestarting:
		return fmt.Sprintf("%s - Task restarting in %s", e.RestartReason, time.Duration(e.StartDelay))
	case structs.TaskNotRestarting:
		return e.RestartReason
	case structs.TaskDriverFailure:
		return e.DriverError
	case structs.TaskSetupFailure:
		return e.SetupError
	case structs.TaskFailedValidation:
		return e.ValidationError
	case structs.TaskSiblingFailed:
		return fmt.Sprintf("Task's sibling %q failed", e.FailedSibling)
	case structs.TaskLeaderDead:
		return "Leader Task in Group dead"
	case structs.TaskClientReconnected:
		return "Client reconnected"
	}
	return e.Message
}

func newEvent(typ string, now time.Time) *structs.TaskEvent { return structs.NewTaskEvent(typ, now) }

func terminatedEvent(res *drivers.ExitResult, now time.Time) *structs.TaskEvent {
	e := newEvent(structs.TaskTerminated, now)
	if res != nil {
		e.ExitCode = res.ExitCode
		e.Signal = res.Signal
		if res.OOMKilled {
			e.Message = "OOM Killed"
		}
		if res.Err != nil {
			// A recovered task's OOM kill is known from its cgroup even
			// though its exit code is not: keep both.
			e.Message = strings.TrimPrefix(e.Message+"; "+res.Err.Error(), "; ")
		}
	}
	return e
}

func restartEvent(d RestartDecision, now time.Time) *structs.TaskEvent {
	e := newEvent(d.EventType, now)
	e.RestartReason = d.Reason
	switch d.EventType {
	case structs.TaskRestarting:
		e.StartDelay = int64(d.Delay)
	case structs.TaskNotRestarting:
		e.FailsTask = true
	}
	return e
}
