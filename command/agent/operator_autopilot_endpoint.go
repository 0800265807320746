package agent

import (
	"net/http"
	"strconv"
	"time"

	"github.com/nomad-edge/nomad/nomad/structs"
)

// autopilotJSON is the autopilot configuration on the wire, as upstream's:
// durations as strings ("200ms").
type autopilotJSON struct {
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

func toAutopilotJSON(c *structs.AutopilotConfig) autopilotJSON {
	return autopilotJSON{
		CleanupDeadServers: c.CleanupDeadServers, LastContactThreshold: c.LastContactThreshold.String(),
		MaxTrailingLogs: c.MaxTrailingLogs, MinQuorum: c.MinQuorum, ServerStabilizationTime: c.ServerStabilizationTime.String(),
		EnableRedundancyZones: c.EnableRedundancyZones, DisableUpgradeMigration: c.DisableUpgradeMigration,
		EnableCustomUpgrades: c.EnableCustomUpgrades, CreateIndex: c.CreateIndex, ModifyIndex: c.ModifyIndex,
	}
}

// parseWireDuration reads a duration field; empty is 0.
func parseWireDuration(field, v string) (time.Duration, error) {
	if v == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, codedErrorf(http.StatusBadRequest, "Error parsing autopilot config: %s: invalid duration %q", field, v)
	}
	return d, nil
}

func (s *HTTPServer) autopilotRoutes(handle func(string, handlerFunc)) {
	handle("GET /v1/operator/autopilot/configuration", s.operatorAutopilotGet)
	handle("PUT /v1/operator/autopilot/configuration", s.operatorAutopilotPut)
	handle("POST /v1/operator/autopilot/configuration", s.operatorAutopilotPut)
	handle("GET /v1/operator/autopilot/health", s.operatorAutopilotHealth)
}

// operatorAutopilotGet handles GET /v1/operator/autopilot/configuration.
func (s *HTTPServer) operatorAutopilotGet(w http.ResponseWriter, r *http.Request) (any, error) {
	var args structs.GenericRequest
	var reply structs.AutopilotConfigResponse
	if err := s.query(w, r, readCall{Method: "Operator.AutopilotGetConfiguration", Opts: &args.QueryOptions, Args: &args, Reply: &reply, Meta: &reply.QueryMeta}); err != nil {
		return nil, err
	}
	return toAutopilotJSON(reply.Config), nil
}

// operatorAutopilotPut handles PUT (and POST)
// /v1/operator/autopilot/configuration: the body is the whole
// configuration, as upstream's (a field left out is its zero value);
// ?cas=<index> writes only over the configuration stored at that index.
// The answer is true or false, whether it was written.
func (s *HTTPServer) operatorAutopilotPut(w http.ResponseWriter, r *http.Request) (any, error) {
	var body autopilotJSON
	if err := decodeBody(r, &body); err != nil {
		return nil, err
	}
	args := structs.AutopilotSetConfigRequest{WriteRequest: writeRequest(r), Config: structs.AutopilotConfig{
		CleanupDeadServers: body.CleanupDeadServers, MaxTrailingLogs: body.MaxTrailingLogs, MinQuorum: body.MinQuorum,
		EnableRedundancyZones: body.EnableRedundancyZones, DisableUpgradeMigration: body.DisableUpgradeMigration,
		EnableCustomUpgrades: body.EnableCustomUpgrades,
	}}
	var err error
	if args.Config.LastContactThreshold, err = parseWireDuration("LastContactThreshold", body.LastContactThreshold); err != nil {
		return nil, err
	}
	if args.Config.ServerStabilizationTime, err = parseWireDuration("ServerStabilizationTime", body.ServerStabilizationTime); err != nil {
		return nil, err
	}
	if v := r.URL.Query().Get("cas"); v != "" {
		index, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return nil, codedErrorf(http.StatusBadRequest, "Error parsing cas value %q: must be a non-negative integer", v)
		}
		args.CAS, args.Config.ModifyIndex = true, index
	}
	var reply structs.AutopilotSetConfigResponse
	if err := s.call(r, "Operator.AutopilotSetConfiguration", &args, &reply); err != nil {
		return nil, err
	}
	setIndex(w, reply.Index)
	return reply.Updated, nil
}

// serverHealthJSON is one server's health on the wire, as upstream's.
type serverHealthJSON struct {
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

// operatorAutopilotHealth handles GET /v1/operator/autopilot/health: 200
// when every server is healthy, 429 with the same body otherwise, as
// upstream's.
func (s *HTTPServer) operatorAutopilotHealth(w http.ResponseWriter, r *http.Request) (any, error) {
	var args structs.GenericRequest
	if err := parseQueryOptions(r, &args.QueryOptions); err != nil {
		return nil, err
	}
	var reply structs.OperatorHealthReply
	if err := s.call(r, "Operator.ServerHealth", &args, &reply); err != nil {
		return nil, err
	}
	out := struct {
		Healthy          bool
		FailureTolerance int
		Leader           string
		Voters           []string
		Servers          []serverHealthJSON
	}{Healthy: reply.Healthy, FailureTolerance: reply.FailureTolerance, Leader: reply.Leader, Voters: nonNil(reply.Voters)}
	for _, h := range reply.Servers {
		out.Servers = append(out.Servers, serverHealthJSON{
			ID: h.ID, Name: h.Name, Address: h.Address, SerfStatus: h.SerfStatus, Version: h.Version, Leader: h.Leader,
			LastContact: h.LastContact.String(), LastTerm: h.LastTerm, LastIndex: h.LastIndex, Healthy: h.Healthy,
			Voter: h.Voter, StableSince: h.StableSince.UTC(),
		})
	}
	if !reply.Healthy {
		return withStatus{Code: http.StatusTooManyRequests, Body: out}, nil
	}
	return out, nil
}
