package structs

import (
	"fmt"
	"strings"
)

// MaxNestingDepth is how deeply a task's free-form config may nest (the
// config map itself is the first level). It is the limit the HTTP API and
// job file parser put on their input (helper/nesting.MaxDepth, checked
// equal by a test), and it sits far below the msgpack decoder's own limit
// of 1024 levels for a whole raft entry, of which the deepest envelope (a
// plan's allocation embedding its job) takes about ten: a job that
// validates can always be written to the raft log and read back.
const MaxNestingDepth = 64

// MaxGroupCount is the most instances one task group may ask for.
//
// A fleet that runs something on every node uses a system job, whose
// size follows the fleet and not count. A service or batch group of more
// than ten thousand instances would make a single plan carry ten thousand
// allocations through one raft entry and every reschedule of the group
// walk as many; such a workload is better split into groups or jobs.
// Upstream sets no maximum; a billion, accepted, once ran the scheduler
// out of memory.
const MaxGroupCount = 10_000

// DefaultJobMaxCount is the most instances one job may ask for, the sum of
// its groups' counts, unless the server's job_max_count says otherwise.
// It is upstream's default for that key: MaxGroupCount alone let a job of
// 3,000 groups of 10,000 (30 million instances in a 480 KB request)
// through, and the server that took it grew to 1.6 GB.
const DefaultJobMaxCount = 50_000

// MaxJobMaxCount bounds job_max_count itself: past it, one plan would
// carry more allocations than a raft entry should.
const MaxJobMaxCount = 1_000_000

// InstanceCount is how many instances job asks for: the sum of its
// groups' counts (negative counts, refused by Validate, count as none).
func (j *Job) InstanceCount() int {
	n := 0
	for _, tg := range j.TaskGroups {
		if tg != nil && tg.Count > 0 {
			n += tg.Count
		}
	}
	return n
}

// InstanceCountProblem says why a job of n instances is refused under
// limit (job_max_count), or "" when it is not.
func InstanceCountProblem(n, limit int) string {
	if limit <= 0 || n <= limit {
		return ""
	}
	return fmt.Sprintf("Job asks for %d instances (the sum of its task groups' count), more than the maximum of %d per job (server job_max_count)", n, limit)
}

// MaxJobIDLength is the longest job ID, in characters.
const MaxJobIDLength = 128

// ValueDepth is how deeply a decoded free-form value (maps and lists, as
// JSON, msgpack and the job file parser make them) nests: 0 for a scalar,
// 1 for a flat map or list. It stops counting past limit, so a hostile
// value costs no more to measure than a legitimate one.
func ValueDepth(v any, limit int) int {
	if limit < 0 {
		return 0
	}
	deepest := 0
	visit := func(el any) { deepest = max(deepest, ValueDepth(el, limit-1)) }
	switch x := v.(type) {
	case map[string]any:
		for _, el := range x {
			visit(el)
		}
	case []any:
		for _, el := range x {
			visit(el)
		}
	case []map[string]any: // the job file parser's repeated blocks
		for _, el := range x {
			visit(el)
		}
	default:
		return 0
	}
	return deepest + 1
}

// nameProblem says what is wrong with a group or task name (what names
// it, e.g. "Task name"), or "" when nothing is. Names end up in
// allocation names and, for tasks, directory names on clients.
func nameProblem(what, name string) string {
	switch {
	case strings.ContainsRune(name, 0):
		return fmt.Sprintf("%s %q must not contain a NUL character", what, name)
	case strings.Contains(name, "/"):
		return fmt.Sprintf("%s %q must not contain %q", what, name, "/")
	case strings.Contains(name, `\`):
		return fmt.Sprintf("%s %q must not contain %q", what, name, `\`)
	}
	return ""
}

// taskNameProblem adds to nameProblem what makes a task's directory
// (<alloc dir>/<task>) anything but a directory of its own.
func taskNameProblem(name string) string {
	if p := nameProblem("Task name", name); p != "" {
		return p
	}
	switch name {
	case ".", "..":
		return fmt.Sprintf("Task name %q is not allowed: it names a directory outside the task's own", name)
	case SharedAllocDirName:
		return fmt.Sprintf("Task name %q is not allowed: the allocation's shared directory has that name", name)
	}
	return ""
}

// SharedAllocDirName is the directory every allocation's tasks share,
// beside their own; no task may take its name.
const SharedAllocDirName = "alloc"
