package agent

import (
	"runtime/debug"
	"testing"

	"github.com/shoenig/test/must"
)

// An agent that runs a server collects at GOGC=200 unless its environment
// sets GOGC, which is then left as the runtime read it.
func TestSetServerGC(t *testing.T) {
	was := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(was) })

	got, set := setServerGC(func(string) string { return "" })
	must.True(t, set)
	must.Eq(t, "200", got)
	must.Eq(t, 200, debug.SetGCPercent(100), must.Sprint("in force"))

	got, set = setServerGC(func(k string) string { return map[string]string{"GOGC": "50"}[k] })
	must.False(t, set)
	must.Eq(t, "50", got)
	must.Eq(t, 100, debug.SetGCPercent(100), must.Sprint("the environment's, untouched"))
}
