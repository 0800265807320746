package structs

// The rules that resolve a reconnect (see docs/concepts/disconnected-clients.md,
// "Reconnect"), as a ReconnectDecision names them.
const (
	// ReconnectRuleFailedOriginal: the allocation failed while its node
	// was away; it is stopped and its replacement, if any, stays.
	ReconnectRuleFailedOriginal = "failed original"
	// ReconnectRuleFinished: it completed while away; a service allocation
	// is stopped, a batch one kept (its work is done).
	ReconnectRuleFinished = "finished while disconnected"
	// ReconnectRuleJobVersion: the copy of the newer job version wins.
	ReconnectRuleJobVersion = "job version"
	// ReconnectRuleRescheduled: it was marked for rescheduling while away.
	ReconnectRuleRescheduled = "rescheduled while disconnected"
	// ReconnectRuleMigrated: an operator stop or a drain moves it.
	ReconnectRuleMigrated = "migrated"
	// ReconnectRuleFailedReplacement: a replacement that failed, waiting
	// for its reschedule, gives way to a member of its chain that came
	// back.
	ReconnectRuleFailedReplacement = "failed replacement"
	// ReconnectRuleStrategy: same job version; the group's
	// disconnect.reconcile strategy chose.
	ReconnectRuleStrategy = "strategy"
)

// ReconnectDecision records how the servers resolved the return of an
// allocation whose node had been disconnected: which copy of the instance
// was kept, which was stopped, and why. The same record is put on both
// (when both exist), so an operator reading either one in `nomad alloc
// status` can answer "why is this copy running and not that one?". Upstream
// Nomad has no such record; official clients ignore the field.
type ReconnectDecision struct {
	// Rule is one of the ReconnectRule* constants.
	Rule string
	// Strategy is the group's disconnect.reconcile setting, also when
	// another rule decided.
	Strategy string
	// KeptAllocID and StoppedAllocID are the two copies; either is empty
	// when there was no such copy (a failed original with no replacement
	// yet: the count places one).
	KeptAllocID    string
	StoppedAllocID string
	// KeptScore and StoppedScore are the normalised node scores recorded
	// when each copy was placed, which best_score compares.
	KeptScore    float64
	StoppedScore float64
	// EvalID is the evaluation that decided; Time its server time, in
	// Unix nanoseconds as task event times are.
	EvalID string
	Time   int64
}

// Copy returns a copy; the record holds no references.
func (d *ReconnectDecision) Copy() *ReconnectDecision {
	if d == nil {
		return nil
	}
	c := *d
	return &c
}
