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
// writes secrets/nomad_token.
//
// The servers sign only the default identity, with their audience and
// lifetime (DefaultWorkloadIdentityTTL), and a renewed identity replaces
// the file without telling the task: Name other than "default",
// Audience, TTL and a ChangeMode other than noop (with its ChangeSignal)
// are refused by name until they are honoured.
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
	if w.TTL != 0 {
		p.add("Identity ttl is not supported: the servers sign the default identity for %s", DefaultWorkloadIdentityTTL)
	}
	if w.ChangeMode != "" && w.ChangeMode != "noop" {
		p.add("Identity change_mode %q is not supported: a renewed identity replaces the file (change_mode \"noop\")", w.ChangeMode)
	}
	if w.ChangeSignal != "" {
		p.add("Identity change_signal is not supported: it goes with change_mode \"signal\"")
	}
	return p
}
