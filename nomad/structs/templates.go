package structs

import (
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"time"
)

// Template change modes: what a re-render that changes the content does
// to the running task.
const (
	TemplateChangeModeNoop    = "noop"
	TemplateChangeModeRestart = "restart"
	TemplateChangeModeSignal  = "signal"
	TemplateChangeModeScript  = "script"
)

// Template defaults, as upstream's.
const (
	DefaultTemplateSplay       = 5 * time.Second
	DefaultTemplatePerms       = "0644"
	DefaultChangeScriptTimeout = 5 * time.Second
)

// Template is a task's `template` block: a file (or, with Envvars,
// environment variables) the client renders before the task starts and
// again when the data it read changes. Exactly one of SourcePath (a file
// inside the task's directory) and EmbeddedTmpl (`data`) is set; DestPath
// is relative to the task's directory and may not leave the allocation's.
type Template struct {
	SourcePath    string
	DestPath      string
	EmbeddedTmpl  string
	ChangeMode    string
	ChangeSignal  string
	Splay         time.Duration
	Perms         string
	LeftDelim     string
	RightDelim    string
	Envvars       bool
	ErrMissingKey bool
	// Wait bounds how long a change waits for more before it is rendered:
	// at least Min of quiet, at most Max in all; nil renders at once.
	Wait *TemplateWait
	// ChangeScript is what change_mode "script" runs in the task.
	ChangeScript *ChangeScript
	// Uid and Gid own the rendered file; nil (or -1, upstream's default)
	// leaves the client's.
	Uid *int
	Gid *int
}

// ChangeScript is a template's `change_script`: the command run in the
// task, as `alloc exec` runs one, when a re-render changes the content
// (change_mode "script"), killed after Timeout. A failure (an exit code
// other than 0, the timeout, a command that cannot run) is a task event;
// with FailOnError the task is killed and fails.
type ChangeScript struct {
	Command     string
	Args        []string
	Timeout     time.Duration
	FailOnError bool
}

// TemplateWait is a template's `wait { min max }`.
type TemplateWait struct {
	Min time.Duration
	Max time.Duration
}

// Copy returns a deep copy.
func (t *Template) Copy() *Template {
	if t == nil {
		return nil
	}
	n := *t
	if t.Wait != nil {
		w := *t.Wait
		n.Wait = &w
	}
	if t.ChangeScript != nil {
		cs := *t.ChangeScript
		cs.Args = slices.Clone(cs.Args)
		n.ChangeScript = &cs
	}
	if t.Uid != nil {
		n.Uid = new(*t.Uid)
	}
	if t.Gid != nil {
		n.Gid = new(*t.Gid)
	}
	return &n
}

func copyTemplates(ts []*Template) []*Template {
	if ts == nil {
		return nil
	}
	out := make([]*Template, len(ts))
	for i, t := range ts {
		out[i] = t.Copy()
	}
	return out
}

// Canonicalize fills upstream's defaults.
func (t *Template) Canonicalize() {
	if t.ChangeMode == "" {
		t.ChangeMode = TemplateChangeModeRestart
	}
	if t.Perms == "" {
		t.Perms = DefaultTemplatePerms
	}
	if t.LeftDelim == "" {
		t.LeftDelim = "{{"
	}
	if t.RightDelim == "" {
		t.RightDelim = "}}"
	}
	if t.ChangeScript != nil && t.ChangeScript.Timeout == 0 {
		t.ChangeScript.Timeout = DefaultChangeScriptTimeout
	}
}

// Validate checks one template; its problems name the field.
func (t *Template) Validate() error {
	var p problems
	switch {
	case t.SourcePath == "" && t.EmbeddedTmpl == "":
		p.add("template must have one of source or data")
	case t.SourcePath != "" && t.EmbeddedTmpl != "":
		p.add("template must have only one of source or data")
	}
	if t.SourcePath != "" && ArtifactDestEscapes(t.SourcePath) {
		p.add("template source %q escapes the allocation directory", t.SourcePath)
	}
	if t.DestPath == "" {
		p.add("template must have a destination")
	} else if ArtifactDestEscapes(t.DestPath) {
		p.add("template destination %q escapes the allocation directory", t.DestPath)
	}
	switch t.ChangeMode {
	case "", TemplateChangeModeNoop, TemplateChangeModeRestart:
	case TemplateChangeModeSignal:
		if t.ChangeSignal == "" {
			p.add("template change_mode \"signal\" must have a change_signal")
		}
	case TemplateChangeModeScript:
		if t.ChangeScript == nil || t.ChangeScript.Command == "" {
			p.add("template change_mode \"script\" must have a change_script with a command")
		}
	default:
		p.add("template change_mode %q is invalid: must be one of noop, restart, signal, script", t.ChangeMode)
	}
	if cs := t.ChangeScript; cs != nil && cs.Timeout < 0 {
		p.add("template change_script timeout must not be negative")
	}
	for _, id := range []struct {
		name string
		v    *int
	}{{"uid", t.Uid}, {"gid", t.Gid}} {
		if id.v != nil && *id.v < -1 {
			p.add("template %s %d is invalid: must be an ID, or -1 to leave the client's", id.name, *id.v)
		}
	}
	if t.Splay < 0 {
		p.add("template splay must not be negative")
	}
	if t.Perms != "" {
		if _, err := strconv.ParseUint(t.Perms, 8, 12); err != nil {
			p.add("template perms %q is not an octal file mode", t.Perms)
		}
	}
	if w := t.Wait; w != nil && (w.Min < 0 || w.Max < 0 || (w.Max > 0 && w.Max < w.Min)) {
		p.add("template wait must have 0 <= min <= max")
	}
	return p.err()
}

// validateTemplates checks a task's templates; two may not write one
// destination.
func validateTemplates(ts []*Template) []string {
	var p problems
	var dests []string
	for i, t := range ts {
		if err := t.Validate(); err != nil {
			p.addErr(fmt.Sprintf("Template %d validation failed: ", i+1), err)
		}
		d := filepath.Clean(t.DestPath)
		if t.DestPath != "" && slices.Contains(dests, d) {
			p.add("Template %d: destination %q is also another template's", i+1, t.DestPath)
		}
		dests = append(dests, d)
	}
	return p
}
