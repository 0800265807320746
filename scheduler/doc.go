// Package scheduler turns an evaluation into a plan: it reconciles what a
// job wants with the allocations that exist, picks nodes for the missing
// ones, and submits the result through a Planner.
//
// The package is pure. It reads the cluster only through the State
// interface (a read-only snapshot), writes only through the Planner
// interface, does no I/O, starts no goroutines and never reads the clock:
// the caller injects now. Randomness (the node shuffle) is seeded from the
// evaluation ID and the snapshot index, so a placement can be replayed.
// Because of that a dry run (`job plan`) is the same scheduler over a
// snapshot with a recording planner.
//
// Layout:
//
//   - scheduler.go: the State, Planner and Scheduler contracts, the
//     factory table.
//   - generic_sched.go: the service and batch scheduler (Process, retries,
//     blocked and follow-up evaluations, placement).
//   - reconcile.go, reconcile_disconnect.go, allocset.go, reschedule.go:
//     the reconciler, a pure function from (job, allocations, tainted
//     nodes, now) to a ReconcileResults value, written as set algebra on
//     allocSet. Each rule records its decisions (reconcile_results.go:
//     stops, changes in place, ignores, placements) into named sets; the
//     group's GroupResults and its DesiredUpdates counts are read from the
//     final sets once, so a later rule that overrides an earlier one (a
//     scale-down stopping a reconnected allocation) needs no bookkeeping.
//     A group runs the ordered phases of groupPhases
//     (reconcile_phases.go), each a method whose doc comment states what
//     the earlier phases must have decided; tests check the cheap ones
//     around every phase (checkPhases).
//   - testdata/reconcile/*.txt: reconciler scenarios with golden results
//     (reconcile_golden_test.go; go test ./scheduler -run Golden -rewrite),
//     the one format for the reconciler's input → decisions cases; each
//     reconcile also checks what any answer promises (checkResults).
//   - feasible.go, constraint.go, rank.go, stack.go, context.go: node
//     selection as a chain of small iterators, wired in NewGenericStack.
//
// Counting rule. Each instance of a group (a name, job.group[i]) is stood
// for by one replacement chain (O → R1 → R2 …, linked by
// PreviousAllocation; chainSet), counted once. An unknown member stands for
// the instance only while no other member holding it (live, or failed and
// waiting for its reschedule) is heard from and none is newer; otherwise it
// waits on standby, neither counted nor stopped, and the other member
// stands in. A failed member is rescheduled by the group's policy, with the
// chain's attempts (its newest reschedule tracker), never replaced afresh
// through an older unknown one. A chain whose members come back is resolved as
// one unit to exactly one survivor (reconcileReconnecting). Neither an
// unknown allocation nor a stand-in is ever stopped as
// excess: stopping a stand-in would only hand its instance back to the
// unknown original. So after an evaluation exactly Count instances stand,
// or more only when more than Count of them are unknown. The exception: a
// lost allocation of a group with stop_on_client_after holds its instance,
// unreplaced, until its client has surely stopped it (see
// docs/concepts/disconnected-clients.md, "stop_on_client_after"), so for that
// while fewer than Count stand: the alternative is two copies at once.
//
// The treatment of disconnected clients follows
// docs/concepts/disconnected-clients.md, sections
// "Disconnecting allocations", "Replacement while unknown", "Reconnect",
// "Resolution strategies" and "stop_on_client_after"; what is not done yet is
// marked TODO with the section it belongs to.
package scheduler
