//go:build !unix

package proc

// DefaultSignalsForChildren does nothing where tasks cannot be started.
func DefaultSignalsForChildren() {}
