package agent

import (
	"net/http"

	"github.com/nomad-edge/nomad/api"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// The autopilot routes answer in api's types, which carry upstream's wire
// shape (durations as strings).
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
	c := reply.Config
	return api.AutopilotConfiguration{
		CleanupDeadServers: c.CleanupDeadServers, LastContactThreshold: c.LastContactThreshold,
		MaxTrailingLogs: c.MaxTrailingLogs, MinQuorum: c.MinQuorum, ServerStabilizationTime: c.ServerStabilizationTime,
		EnableRedundancyZones: c.EnableRedundancyZones, DisableUpgradeMigration: c.DisableUpgradeMigration,
		EnableCustomUpgrades: c.EnableCustomUpgrades, CreateIndex: c.CreateIndex, ModifyIndex: c.ModifyIndex,
	}, nil
}

// operatorAutopilotPut handles PUT (and POST)
// /v1/operator/autopilot/configuration: the body is the whole
// configuration, as upstream's (a field left out is its zero value);
// ?cas=<index> writes only over the configuration stored at that index.
// The answer is true or false, whether it was written.
func (s *HTTPServer) operatorAutopilotPut(w http.ResponseWriter, r *http.Request) (any, error) {
	var body api.AutopilotConfiguration
	if err := decodeBody(r, &body); err != nil {
		return nil, err
	}
	args := structs.AutopilotSetConfigRequest{WriteRequest: writeRequest(r), Config: structs.AutopilotConfig{
		CleanupDeadServers: body.CleanupDeadServers, LastContactThreshold: body.LastContactThreshold,
		MaxTrailingLogs: body.MaxTrailingLogs, MinQuorum: body.MinQuorum, ServerStabilizationTime: body.ServerStabilizationTime,
		EnableRedundancyZones: body.EnableRedundancyZones, DisableUpgradeMigration: body.DisableUpgradeMigration,
		EnableCustomUpgrades: body.EnableCustomUpgrades,
	}}
	var err error
	if args.Config.ModifyIndex, args.CAS, err = casParam(r); err != nil {
		return nil, err
	}
	var reply structs.AutopilotSetConfigResponse
	if err := s.call(r, "Operator.AutopilotSetConfiguration", &args, &reply); err != nil {
		return nil, err
	}
	setIndex(w, reply.Index)
	return reply.Updated, nil
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
	out := api.OperatorHealthReply{Healthy: reply.Healthy, FailureTolerance: reply.FailureTolerance, Leader: reply.Leader,
		Voters: nonNil(reply.Voters)}
	for _, h := range reply.Servers {
		out.Servers = append(out.Servers, api.ServerHealth{
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
