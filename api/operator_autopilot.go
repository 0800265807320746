package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// AutopilotConfiguration is the servers' autopilot configuration, as
// upstream's; its durations travel as strings ("200ms").
type AutopilotConfiguration struct {
	CleanupDeadServers      bool
	LastContactThreshold    time.Duration
	MaxTrailingLogs         uint64
	MinQuorum               uint
	ServerStabilizationTime time.Duration
	EnableRedundancyZones   bool
	DisableUpgradeMigration bool
	EnableCustomUpgrades    bool
	CreateIndex             uint64
	ModifyIndex             uint64
}

type autopilotWire struct {
	CleanupDeadServers      bool
	LastContactThreshold    string
	MaxTrailingLogs         uint64
	MinQuorum               uint
	ServerStabilizationTime string
	EnableRedundancyZones   bool
	DisableUpgradeMigration bool
	EnableCustomUpgrades    bool
	CreateIndex             uint64
	ModifyIndex             uint64
}

// MarshalJSON writes the durations as strings.
func (c AutopilotConfiguration) MarshalJSON() ([]byte, error) {
	return json.Marshal(autopilotWire{
		CleanupDeadServers: c.CleanupDeadServers, LastContactThreshold: c.LastContactThreshold.String(),
		MaxTrailingLogs: c.MaxTrailingLogs, MinQuorum: c.MinQuorum, ServerStabilizationTime: c.ServerStabilizationTime.String(),
		EnableRedundancyZones: c.EnableRedundancyZones, DisableUpgradeMigration: c.DisableUpgradeMigration,
		EnableCustomUpgrades: c.EnableCustomUpgrades, CreateIndex: c.CreateIndex, ModifyIndex: c.ModifyIndex,
	})
}

// UnmarshalJSON reads the durations from strings.
func (c *AutopilotConfiguration) UnmarshalJSON(b []byte) error {
	var w autopilotWire
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*c = AutopilotConfiguration{
		CleanupDeadServers: w.CleanupDeadServers, MaxTrailingLogs: w.MaxTrailingLogs, MinQuorum: w.MinQuorum,
		EnableRedundancyZones: w.EnableRedundancyZones, DisableUpgradeMigration: w.DisableUpgradeMigration,
		EnableCustomUpgrades: w.EnableCustomUpgrades, CreateIndex: w.CreateIndex, ModifyIndex: w.ModifyIndex,
	}
	var err error
	if c.LastContactThreshold, err = parseOptionalDuration(w.LastContactThreshold); err != nil {
		return fmt.Errorf("LastContactThreshold: %w", err)
	}
	if c.ServerStabilizationTime, err = parseOptionalDuration(w.ServerStabilizationTime); err != nil {
		return fmt.Errorf("ServerStabilizationTime: %w", err)
	}
	return nil
}

func parseOptionalDuration(s string) (time.Duration, error) {
	if s == "" {
		return 0, nil
	}
	return time.ParseDuration(s)
}

// ServerHealth is one server in the autopilot health view.
type ServerHealth struct {
	ID          string
	Name        string
	Address     string
	SerfStatus  string
	Version     string
	Leader      bool
	LastContact string
	LastTerm    uint64
	LastIndex   uint64
	Healthy     bool
	Voter       bool
	StableSince time.Time
}

// OperatorHealthReply is the servers' health as the leader sees it.
type OperatorHealthReply struct {
	Healthy          bool
	FailureTolerance int
	Leader           string
	Voters           []string
	Servers          []ServerHealth
}

// AutopilotGetConfiguration returns the autopilot configuration.
func (op *Operator) AutopilotGetConfiguration(q *QueryOptions) (*AutopilotConfiguration, *QueryMeta, error) {
	var out AutopilotConfiguration
	qm, err := op.client.query("/v1/operator/autopilot/configuration", &out, q)
	if err != nil {
		return nil, nil, err
	}
	return &out, qm, nil
}

// AutopilotSetConfiguration writes the whole autopilot configuration.
func (op *Operator) AutopilotSetConfiguration(conf *AutopilotConfiguration, w *WriteOptions) (bool, *WriteMeta, error) {
	return op.autopilotPut("/v1/operator/autopilot/configuration", conf, w)
}

// AutopilotCASConfiguration writes it only if the stored one is at
// conf.ModifyIndex; false otherwise.
func (op *Operator) AutopilotCASConfiguration(conf *AutopilotConfiguration, w *WriteOptions) (bool, *WriteMeta, error) {
	return op.autopilotPut("/v1/operator/autopilot/configuration?cas="+strconv.FormatUint(conf.ModifyIndex, 10), conf, w)
}

func (op *Operator) autopilotPut(path string, conf *AutopilotConfiguration, w *WriteOptions) (bool, *WriteMeta, error) {
	var out bool
	wm, err := op.client.write(http.MethodPut, path, conf, &out, w)
	if err != nil {
		return false, nil, err
	}
	return out, wm, nil
}

// AutopilotServerHealth returns the servers' health. An unhealthy cluster
// is answered 429 with the same body, which this returns with no error.
func (op *Operator) AutopilotServerHealth(q *QueryOptions) (*OperatorHealthReply, error) {
	var out OperatorHealthReply
	_, err := op.client.query("/v1/operator/autopilot/health", &out, q)
	var ure *UnexpectedResponseError
	if errors.As(err, &ure) && ure.StatusCode == http.StatusTooManyRequests {
		if jerr := json.Unmarshal([]byte(ure.Body), &out); jerr == nil {
			return &out, nil
		}
	}
	if err != nil {
		return nil, err
	}
	return &out, nil
}
