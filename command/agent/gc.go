package agent

import (
	"runtime/debug"
	"strconv"
)

// serverGCPercent is the garbage collector's target (GOGC) of an agent
// that runs a server, unless GOGC is set in its environment. A server's
// live heap is small next to what it allocates (every write is decoded
// from an RPC, encoded for raft and decoded again by the FSM, on each
// server), so at Go's default of 100 the collector's marking took a sixth
// of each server's CPU under a load of job registrations. At 200 it
// runs half as often, for a heap that peaks at three times the live one
// instead of two (benchmarks.md has both figures). A client-only agent,
// often on a small edge box, keeps Go's default.
const serverGCPercent = 200

// setServerGC sets serverGCPercent unless the environment (getenv) sets
// GOGC; it returns the percent in force and whether it set it.
func setServerGC(getenv func(string) string) (string, bool) {
	if v := getenv("GOGC"); v != "" {
		return v, false
	}
	debug.SetGCPercent(serverGCPercent)
	return strconv.Itoa(serverGCPercent), true
}
