package api

import "time"

// WorkloadIdentity is a task's `identity` block, as upstream's: how the
// task's signed identity reaches it (Env: NOMAD_TOKEN; File:
// secrets/nomad_token).
type WorkloadIdentity struct {
	Name         string   `json:",omitempty"`
	Audience     []string `json:",omitempty"`
	ChangeMode   string   `json:",omitempty"`
	ChangeSignal string   `json:",omitempty"`
	Env          bool
	File         bool
	TTL          time.Duration `json:",omitempty"`
}
