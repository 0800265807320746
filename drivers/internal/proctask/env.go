package proctask

import (
	"maps"
	"path"
	"slices"
)

// DefaultPath is the PATH a task gets unless its env sets one. Tasks do not
// inherit the agent's environment: the agent's secrets and settings are
// none of a task's business, and a task must behave the same whichever way
// the agent was started.
const DefaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// Env is the task's environment on top of a minimal base, less the
// variables whose names match a denied pattern (checked by the caller),
// sorted so that a process's environment does not depend on map order.
func Env(env map[string]string, denied []string) []string {
	all := map[string]string{"PATH": DefaultPath}
	maps.Copy(all, env)
	out := make([]string, 0, len(all))
	for _, k := range slices.Sorted(maps.Keys(all)) {
		if !matchesAny(denied, k) {
			out = append(out, k+"="+all[k])
		}
	}
	return out
}

func matchesAny(patterns []string, name string) bool {
	for _, p := range patterns {
		// Names hold no '/', so path.Match is a glob over the name.
		if ok, _ := path.Match(p, name); ok {
			return true
		}
	}
	return false
}
