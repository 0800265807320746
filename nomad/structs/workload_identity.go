package structs

import (
	"slices"
	"time"
)

// WorkloadIdentityDefaultName is the name of a task's default identity,
// the one Alloc.SignIdentities signs.
const WorkloadIdentityDefaultName = "default"

// WorkloadIdentity is a task's `identity` block: how its default identity
// reaches the task. Env sets NOMAD_TOKEN in the task's environment, File
// writes secrets/nomad_token. TTL is how long each signed identity lives
// (DefaultWorkloadIdentityTTL when zero; the client renews it at half
// life), and ChangeMode what a renewal does to the running task: noop
// (the file is rewritten, the environment changes at the next start),
// restart, or signal with ChangeSignal.
//
// The servers sign only the default identity, with their audience: a
// Name other than "default" and Audience are refused by name until
// named identities are honoured.
type WorkloadIdentity struct {
	Name         string
	Audience     []string
	ChangeMode   string
	ChangeSignal string
	Env          bool
	File         bool
	TTL          time.Duration
}

// Copy returns a deep copy.
func (w *WorkloadIdentity) Copy() *WorkloadIdentity {
	if w == nil {
		return nil
	}
	n := *w
	n.Audience = slices.Clone(w.Audience)
	return &n
}

// MinWorkloadIdentityTTL bounds ttl from below: the client renews at half
// life, and a shorter one would have every task ask the servers all the
// time.
const MinWorkloadIdentityTTL = time.Minute

// IdentityTTL is how long each signed identity of w lives.
func (w *WorkloadIdentity) IdentityTTL() time.Duration {
	if w == nil || w.TTL == 0 {
		return DefaultWorkloadIdentityTTL
	}
	return w.TTL
}

// validate refuses what the client and servers cannot honour yet, each
// naming its field.
func (w *WorkloadIdentity) validate() []string {
	if w == nil {
		return nil
	}
	var p problems
	if w.Name != "" && w.Name != WorkloadIdentityDefaultName {
		p.add("Identity name %q is not supported: only the default identity (name %q) is signed", w.Name, WorkloadIdentityDefaultName)
	}
	if len(w.Audience) > 0 {
		p.add("Identity aud is not supported: the default identity's audience is fixed")
	}
	if w.TTL != 0 && w.TTL < MinWorkloadIdentityTTL {
		p.add("Identity ttl %s is invalid: must be at least %s (the client renews at half life)", w.TTL, MinWorkloadIdentityTTL)
	}
	switch w.ChangeMode {
	case "", WorkloadIdentityChangeModeNoop, WorkloadIdentityChangeModeRestart:
		if w.ChangeSignal != "" {
			p.add("Identity change_signal is only for change_mode \"signal\"")
		}
	case WorkloadIdentityChangeModeSignal:
		if w.ChangeSignal == "" {
			p.add("Identity change_mode \"signal\" must have a change_signal")
		}
	default:
		p.add("Identity change_mode %q is invalid: must be one of noop, restart, signal", w.ChangeMode)
	}
	return p
}

// Identity change modes: what a renewed identity does to the running task.
const (
	WorkloadIdentityChangeModeNoop    = "noop"
	WorkloadIdentityChangeModeRestart = "restart"
	WorkloadIdentityChangeModeSignal  = "signal"
)
