// Package schedtest is the test harness of package scheduler: a Harness
// that implements scheduler.Planner over a real in-memory state store,
// applies plans as the plan applier would when it accepts everything, and
// records every plan and evaluation the scheduler produced, so that tests
// check what the scheduler decided, not how.
package schedtest
