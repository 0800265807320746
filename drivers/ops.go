package drivers

// Signaler is implemented by drivers that can send a running task a signal
// without stopping it (`nomad alloc signal`).
type Signaler interface {
	// SignalTask sends signal (a name as ParseSignal reads it) to the
	// task's processes. A task the driver does not track is
	// ErrTaskNotFound.
	SignalTask(taskID, signal string) error
}
