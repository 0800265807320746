//go:build !linux

package proc

// DefaultSignalsForChildren does nothing where the drivers cannot start tasks.
func DefaultSignalsForChildren() {}
