package command

import (
	"cmp"
	"maps"
	"slices"

	"github.com/nomad-edge/nomad/api"
)

// taskLifecycles returns each task's lifecycle block by name, from the job
// the allocation runs; a main task has none.
func taskLifecycles(a *api.Allocation) map[string]*api.TaskLifecycle {
	out := map[string]*api.TaskLifecycle{}
	if a.Job == nil {
		return out
	}
	g := a.Job.LookupTaskGroup(a.TaskGroup)
	if g == nil {
		return out
	}
	for _, t := range g.Tasks {
		if !t.Lifecycle.Empty() {
			out[t.Name] = t.Lifecycle
		}
	}
	return out
}

// lifecycleName is how alloc status names a task's lifecycle, as upstream:
// "prestart", "poststart sidecar", ...; "main" for a main task.
func lifecycleName(l *api.TaskLifecycle) string {
	switch {
	case l.Empty():
		return "main"
	case l.Sidecar:
		return l.Hook + " sidecar"
	}
	return l.Hook
}

// sortedTaskNames orders an allocation's tasks as upstream shows them: the
// ephemeral lifecycle tasks, then the sidecars, then the main tasks, each
// by name.
func sortedTaskNames(a *api.Allocation) []string {
	lcs := taskLifecycles(a)
	rank := func(name string) int {
		switch l := lcs[name]; {
		case l.Empty():
			return 2
		case l.Sidecar:
			return 1
		}
		return 0
	}
	names := slices.Collect(maps.Keys(a.TaskStates))
	slices.SortFunc(names, func(x, y string) int { return cmp.Or(cmp.Compare(rank(x), rank(y)), cmp.Compare(x, y)) })
	return names
}
