package api

import "time"

// Template is a task's `template` block, with upstream's wire names
// (change_script, uid and gid are not implemented and have no field).
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
}

// WaitConfig is a template's `wait { min max }`.
type WaitConfig struct {
	Min *time.Duration `json:",omitempty"`
	Max *time.Duration `json:",omitempty"`
}
