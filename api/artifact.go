package api

import (
	"path"
	"path/filepath"
	"strings"
)

// TaskArtifact is a task's `artifact` block, as upstream's wire shape has
// it: something the client fetches into the task's directory before the
// task starts.
type TaskArtifact struct {
	GetterSource  *string           `json:",omitempty"`
	GetterOptions map[string]string `json:",omitempty"`
	GetterHeaders map[string]string `json:",omitempty"`
	GetterMode    *string           `json:",omitempty"`
	RelativeDest  *string           `json:",omitempty"`
}

// Canonicalize fills upstream's defaults: mode "any", and a destination
// of local/ (local/<file name> in file mode).
func (a *TaskArtifact) Canonicalize() {
	if a.GetterMode == nil || *a.GetterMode == "" {
		a.GetterMode = new("any")
	}
	if a.GetterSource == nil {
		a.GetterSource = new("")
	}
	if len(a.GetterOptions) == 0 {
		a.GetterOptions = nil
	}
	if len(a.GetterHeaders) == 0 {
		a.GetterHeaders = nil
	}
	if a.RelativeDest == nil {
		dest := "local/"
		if *a.GetterMode == "file" {
			dest = filepath.Join("local", path.Base(*a.GetterSource))
		}
		a.RelativeDest = &dest
	}
}

// ArtifactDestEscapes reports whether an artifact's destination, relative
// to the task's directory, leaves the allocation's directory (the task's
// own directory and the shared ../alloc/ are inside). It is the rule of
// structs.ArtifactDestEscapes, repeated because api imports nothing of
// ours; a test keeps the two equal.
func ArtifactDestEscapes(dest string) bool {
	rel := filepath.Clean(filepath.Join("task", dest))
	for _, root := range []string{"task", "alloc"} {
		if rel == root || strings.HasPrefix(rel, root+string(filepath.Separator)) {
			return false
		}
	}
	return true
}
