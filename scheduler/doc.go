// Package scheduler turns an evaluation into a plan: it reconciles what a
// job wants with the allocations that exist, picks nodes for the missing
// ones, and submits the result through a Planner.
//
// The package is pure. It imports only the model (nomad/structs), and
// reads the cluster only through the State interface (a read-only
// snapshot), writes only through the Planner interface, does no I/O,
// starts no goroutines and never reads the clock: the caller injects now.
// Randomness (the node shuffle) is seeded from the evaluation ID and the
// snapshot index, so a placement can be replayed. Because of that a dry
// run (`job plan`) is the same scheduler over a snapshot with a recording
// planner.
//
// Its parts, and which way they call:
//
//   - The schedulers (service and batch, system and sysbatch, on one base)
//     own an evaluation from start to plan: they read the snapshot, ask the
//     reconciler what to change, ask node selection where to place, and
//     submit one plan, retrying on a partial commit and leaving blocked or
//     follow-up evaluations for what cannot be done now.
//   - The reconciler is a pure function from (job, allocations, tainted
//     nodes, now) to a results value, written as set algebra on allocSet.
//     A group runs a fixed sequence of named phases (groupPhases), each a
//     method whose doc comment states what earlier phases must have
//     decided; each records its decisions (stops, in-place changes, ignores,
//     placements) into named sets, and the group's results and counts are
//     read from the final sets once, so a later phase that overrides an
//     earlier one needs no bookkeeping. Tests check the cheap
//     preconditions around every phase (checkPhases).
//   - Node selection is a chain of small iterators (feasibility checks,
//     then ranking), wired in one constructor, each stage testable alone.
//
// The reconciler's cases are written in one format, the scenario files
// under testdata/reconcile with golden results (go test ./scheduler -run
// Golden -rewrite); every reconcile there is also checked for what any
// answer promises (checkResults). Property tests hold the invariants over
// random sequences.
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
