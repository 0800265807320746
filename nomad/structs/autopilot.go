package structs

import (
	"errors"
	"fmt"
	"time"
)

// AutopilotConfig is the servers' autopilot configuration (GET/PUT
// /v1/operator/autopilot/configuration, the agent's autopilot block), with
// upstream's names. What this version honours: CleanupDeadServers and
// MinQuorum in the leader's dead-server cleanup, and LastContactThreshold,
// MaxTrailingLogs and ServerStabilizationTime in the health it reports.
// Upstream's Enterprise-only switches are refused when set.
type AutopilotConfig struct {
	// CleanupDeadServers removes servers that stayed failed in gossip past
	// the server's dead-server cleanup time from raft.
	CleanupDeadServers bool
	// LastContactThreshold: a follower that has not heard from the leader
	// for longer is unhealthy.
	LastContactThreshold time.Duration
	// MaxTrailingLogs: a server whose last log index is further behind the
	// leader's is unhealthy.
	MaxTrailingLogs uint64
	// MinQuorum: dead servers are not removed while it would leave fewer
	// voters than this.
	MinQuorum uint
	// ServerStabilizationTime: a healthy server counts as stable once it
	// has been healthy this long.
	ServerStabilizationTime time.Duration

	EnableRedundancyZones   bool
	DisableUpgradeMigration bool
	EnableCustomUpgrades    bool

	CreateIndex uint64
	ModifyIndex uint64
}

// DefaultAutopilotConfig is upstream's default.
func DefaultAutopilotConfig() *AutopilotConfig {
	return &AutopilotConfig{
		CleanupDeadServers:      true,
		LastContactThreshold:    200 * time.Millisecond,
		MaxTrailingLogs:         250,
		ServerStabilizationTime: 10 * time.Second,
	}
}

// Copy returns a copy.
func (c *AutopilotConfig) Copy() *AutopilotConfig {
	if c == nil {
		return nil
	}
	n := *c
	return &n
}

// Validate refuses, by name, what this version cannot honour.
func (c *AutopilotConfig) Validate() error {
	var errs []error
	for _, f := range []struct {
		name string
		on   bool
	}{
		{"EnableRedundancyZones", c.EnableRedundancyZones},
		{"DisableUpgradeMigration", c.DisableUpgradeMigration},
		{"EnableCustomUpgrades", c.EnableCustomUpgrades},
	} {
		if f.on {
			errs = append(errs, fmt.Errorf("%s is an upstream Enterprise feature this version does not have", f.name))
		}
	}
	if c.LastContactThreshold < 0 || c.ServerStabilizationTime < 0 {
		errs = append(errs, errors.New("LastContactThreshold and ServerStabilizationTime must not be negative"))
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w: %w", ErrInvalidRequest, errors.Join(errs...))
	}
	return nil
}

// AutopilotSetConfigRequest writes the configuration; with CAS only over
// Config.ModifyIndex.
type AutopilotSetConfigRequest struct {
	Config AutopilotConfig
	CAS    bool
	WriteRequest
}

// AutopilotConfigResponse is Operator.AutopilotGetConfiguration's reply.
type AutopilotConfigResponse struct {
	Config *AutopilotConfig
	QueryMeta
}

// AutopilotSetConfigResponse says whether the write happened (a stale CAS
// does not).
type AutopilotSetConfigResponse struct {
	Updated bool
	Index   uint64
}

// RaftStats is what one server reports of its raft state, for the
// leader's health view.
type RaftStats struct {
	// LastContact is how long ago this server last heard from the leader
	// (0 on the leader).
	LastContact time.Duration
	LastTerm    uint64
	LastIndex   uint64
}

// ServerHealth is one server in the autopilot health view.
type ServerHealth struct {
	ID          string
	Name        string
	Address     string
	SerfStatus  string
	Version     string
	Leader      bool
	LastContact time.Duration
	LastTerm    uint64
	LastIndex   uint64
	Healthy     bool
	Voter       bool
	StableSince time.Time
}

// OperatorHealthReply is the cluster's health as the leader sees it.
type OperatorHealthReply struct {
	Healthy          bool
	FailureTolerance int
	Leader           string
	Voters           []string
	Servers          []ServerHealth
}
