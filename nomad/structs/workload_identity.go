package structs

import (
	"regexp"
	"slices"
	"time"
)

// WorkloadIdentityDefaultName is the name of a task's default identity,
// the one Alloc.SignIdentities signs.
const WorkloadIdentityDefaultName = "default"

// WorkloadIdentity is a task's `identity` block: how one of its signed
// identities reaches the task. The default identity (no Name, or
// "default") has the servers' audience and is the task's token for
// Nomad's API: Env sets NOMAD_TOKEN in the task's environment, File
// writes secrets/nomad_token. A named one (Task.Identities) carries the
// Audience the block gives, for a third party that trusts the servers'
// keys (/.well-known/jwks.json), not for Nomad's API: Env sets
// NOMAD_TOKEN_<name>, File writes secrets/nomad_<name>.jwt, as upstream.
// TTL is how long each signed identity lives (DefaultWorkloadIdentityTTL
// when zero; the client renews it at half life), and ChangeMode what a
// renewal does to the running task: noop (the file is rewritten, the
// environment changes at the next start), restart, or signal with
// ChangeSignal.
type WorkloadIdentity struct {
	Name         string
	Audience     []string
	ChangeMode   string
	ChangeSignal string
	Env          bool
	File         bool
	TTL          time.Duration
}

// WorkloadIdentityAudience is the default identity's audience: Nomad's
// API accepts a workload identity that carries it, and no other.
const WorkloadIdentityAudience = "nomadproject.io"

// IsDefault reports whether w is the task's default identity.
func (w *WorkloadIdentity) IsDefault() bool {
	return w == nil || w.Name == "" || w.Name == WorkloadIdentityDefaultName
}

// identityNameRE is what a named identity's name may be: it becomes part
// of an environment variable's and a file's name.
var identityNameRE = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,128}$`)

// validateNamedIdentities checks the named identity blocks of a task:
// each named, once, with an audience, and valid as a block.
func validateNamedIdentities(ws []*WorkloadIdentity) []string {
	var p problems
	seen := map[string]bool{}
	for i, w := range ws {
		if w == nil {
			p.add("Identity %d is empty", i+1)
			continue
		}
		switch {
		case w.IsDefault():
			p.add("Identity %d: a named identity needs a name other than %q (the default identity is the task's Identity)", i+1, WorkloadIdentityDefaultName)
		case !identityNameRE.MatchString(w.Name):
			p.add("Identity name %q is invalid: letters, digits, _ and - only (it names NOMAD_TOKEN_%s and secrets/nomad_%s.jwt)", w.Name, w.Name, w.Name)
		case seen[w.Name]:
			p.add("Identity name %q is used twice", w.Name)
		}
		seen[w.Name] = true
		if len(w.Audience) == 0 {
			p.add("Identity %q needs an aud: a named identity is for a third party, which checks its audience", w.Name)
		}
		for _, a := range w.Audience {
			if a == "" {
				p.add("Identity %q has an empty aud", w.Name)
			}
		}
		p = append(p, w.validateCommon()...)
	}
	return p
}

func copyIdentities(ws []*WorkloadIdentity) []*WorkloadIdentity {
	if ws == nil {
		return nil
	}
	out := make([]*WorkloadIdentity, len(ws))
	for i, w := range ws {
		out[i] = w.Copy()
	}
	return out
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

// validate checks the default identity block: its name, if given, is
// "default", and its audience is the servers' (fixed, so aud is refused).
func (w *WorkloadIdentity) validate() []string {
	if w == nil {
		return nil
	}
	var p problems
	if !w.IsDefault() {
		p.add("Identity name %q is not the default identity's: a named identity goes in Identities", w.Name)
	}
	if len(w.Audience) > 0 {
		p.add("Identity aud is not supported on the default identity: its audience is the servers' (%s); give a named identity its own", WorkloadIdentityAudience)
	}
	return append(p, w.validateCommon()...)
}

// validateCommon checks what every identity block may set.
func (w *WorkloadIdentity) validateCommon() []string {
	var p problems
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
