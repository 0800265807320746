package api

import "time"

// Template is a task's `template` block, with upstream's wire names.
type Template struct {
	SourcePath    *string        `json:",omitempty"`
	DestPath      *string        `json:",omitempty"`
	EmbeddedTmpl  *string        `json:",omitempty"`
	ChangeMode    *string        `json:",omitempty"`
	ChangeSignal  *string        `json:",omitempty"`
	Splay         *time.Duration `json:",omitempty"`
	Perms         *string        `json:",omitempty"`
	LeftDelim     *string        `json:",omitempty"`
	RightDelim    *string        `json:",omitempty"`
	Envvars       *bool          `json:",omitempty"`
	ErrMissingKey *bool          `json:",omitempty"`
	Wait          *WaitConfig    `json:",omitempty"`
	ChangeScript  *ChangeScript  `json:",omitempty"`
	Uid           *int           `json:",omitempty"`
	Gid           *int           `json:",omitempty"`
}

// ChangeScript is a template's `change_script { command args timeout
// fail_on_error }`.
type ChangeScript struct {
	Command     *string        `json:",omitempty"`
	Args        []string       `json:",omitempty"`
	Timeout     *time.Duration `json:",omitempty"`
	FailOnError *bool          `json:",omitempty"`
}

// WaitConfig is a template's `wait { min max }`.
type WaitConfig struct {
	Min *time.Duration `json:",omitempty"`
	Max *time.Duration `json:",omitempty"`
}
