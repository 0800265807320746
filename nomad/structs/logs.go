package structs

import "fmt"

// LogConfig is a task's `logs` block: how many files of its stdout and of
// its stderr the client keeps, and how large each grows before the next
// begins. A nil LogConfig means the defaults.
type LogConfig struct {
	MaxFiles      int
	MaxFileSizeMB int
}

// Upstream's defaults for the `logs` block.
const (
	DefaultLogMaxFiles      = 10
	DefaultLogMaxFileSizeMB = 10
)

// DefaultLogConfig returns the `logs` block a task without one gets.
func DefaultLogConfig() *LogConfig {
	return &LogConfig{MaxFiles: DefaultLogMaxFiles, MaxFileSizeMB: DefaultLogMaxFileSizeMB}
}

// Copy returns a copy.
func (l *LogConfig) Copy() *LogConfig {
	if l == nil {
		return nil
	}
	out := *l
	return &out
}

// Validate refuses a block that would keep no log at all.
func (l *LogConfig) Validate() error {
	if l == nil {
		return nil
	}
	if l.MaxFiles < 1 {
		return fmt.Errorf("logs: max_files must be at least 1, got %d", l.MaxFiles)
	}
	if l.MaxFileSizeMB < 1 {
		return fmt.Errorf("logs: max_file_size must be at least 1 (MB), got %d", l.MaxFileSizeMB)
	}
	return nil
}
