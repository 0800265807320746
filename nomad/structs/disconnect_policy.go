package structs

import (
	"fmt"
	"strings"
	"time"
)

// Where an allocation's disconnect policy came from.
const (
	DisconnectSourceGroup    = "group"
	DisconnectSourceNodePool = "node pool"
	DisconnectSourceNone     = "none"
)

// PoolDisconnect is the disconnect policy of the node pool an allocation
// was placed in, copied onto the allocation when it is placed so that
// every later decision about it (heartbeats, the reconciler, the CLI)
// reads the same policy without a state lookup. Not in upstream's API.
type PoolDisconnect struct {
	Pool   string
	Policy *NodePoolDisconnect
}

// Copy returns a copy.
func (p *PoolDisconnect) Copy() *PoolDisconnect {
	if p == nil {
		return nil
	}
	return &PoolDisconnect{Pool: p.Pool, Policy: p.Policy.Copy()}
}

// EffectiveDisconnect is the disconnect policy that applies to an
// allocation, and where it came from.
type EffectiveDisconnect struct {
	// LostAfter is the window in which the allocation is unknown rather
	// than lost; zero means none.
	LostAfter time.Duration
	Replace   bool
	Reconcile string
	// Source is DisconnectSourceGroup, DisconnectSourceNodePool or
	// DisconnectSourceNone; Pool names the pool for DisconnectSourceNodePool.
	Source string
	Pool   string
	// Summary is String(), filled in for the HTTP API so that clients show
	// the server's wording rather than resolving the policy again.
	Summary string `json:",omitempty"`
}

// String is what `nomad alloc status` shows.
func (e EffectiveDisconnect) String() string {
	switch e.Source {
	case DisconnectSourceNodePool:
		return fmt.Sprintf("lost_after %s, replace %t, reconcile %s (from node pool %s)", shortDuration(e.LostAfter), e.Replace, e.Reconcile, e.Pool)
	case DisconnectSourceGroup:
		if e.LostAfter <= 0 {
			return "no lost window (from the group)"
		}
		return fmt.Sprintf("lost_after %s, replace %t, reconcile %s (from the group)", shortDuration(e.LostAfter), e.Replace, e.Reconcile)
	}
	return "none: allocations are lost when their node disconnects"
}

// setsDisconnect reports whether the group says anything about
// disconnects itself (a job-level block is copied into every group that
// sets none when the job file is parsed, so it counts here too). An
// explicit "0s" is a setting: the group asked for no window.
func (tg *TaskGroup) setsDisconnect() bool {
	return tg.Disconnect != nil || tg.MaxClientDisconnect != nil || tg.StopAfterClientDisconnect != nil
}

// ResolveDisconnect is the one place the disconnect policy of an
// allocation is decided: the group's own settings (or the job's, which
// groups inherit) win; a group that sets none takes its node pool's; with
// neither there is no window. Every caller that asks about a window, a
// replacement or a reconcile strategy goes through here (through
// Allocation.DisconnectPolicy), so they can never disagree.
func ResolveDisconnect(tg *TaskGroup, pool *PoolDisconnect) EffectiveDisconnect {
	if tg != nil && tg.setsDisconnect() {
		return EffectiveDisconnect{
			LostAfter: tg.LostAfter(), Replace: tg.ReplaceOnDisconnect(),
			Reconcile: tg.ReconcileStrategy(), Source: DisconnectSourceGroup,
		}
	}
	if pool != nil && pool.Policy != nil {
		p := pool.Policy
		e := EffectiveDisconnect{
			LostAfter: p.LostAfter, Replace: true, Reconcile: p.Reconcile,
			Source: DisconnectSourceNodePool, Pool: pool.Pool,
		}
		if p.Replace != nil {
			e.Replace = *p.Replace
		}
		if e.Reconcile == "" {
			e.Reconcile = ReconcileOptionBestScore
		}
		return e
	}
	return EffectiveDisconnect{Replace: true, Reconcile: ReconcileOptionBestScore, Source: DisconnectSourceNone}
}

// DisconnectPolicy is the allocation's effective disconnect policy; see
// ResolveDisconnect.
func (a *Allocation) DisconnectPolicy() EffectiveDisconnect {
	return ResolveDisconnect(a.LookupTaskGroup(), a.PoolDisconnect)
}

// shortDuration writes 1h rather than 1h0m0s.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// OfflineRestart reports whether a client restarted while cut off may
// restart this allocation's dead tasks before any server answers: its
// effective window (the group's, or its node pool's) is set and the group
// has not opted out with disconnect { offline_restart = false }.
func (a *Allocation) OfflineRestart() bool {
	if a.DisconnectPolicy().LostAfter <= 0 {
		return false
	}
	tg := a.LookupTaskGroup()
	return tg == nil || tg.Disconnect == nil || tg.Disconnect.OfflineRestart == nil || *tg.Disconnect.OfflineRestart
}
