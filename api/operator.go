package api

import (
	"io"
	"net/http"
	"net/url"
	"strconv"
)

// Operator is the handle on the operator endpoints: low-level cluster
// repair, such as removing a dead server from raft.
type Operator struct {
	client *Client
}

// Operator returns the handle on the operator endpoints.
func (c *Client) Operator() *Operator { return &Operator{client: c} }

// RaftServer is one server of the raft configuration.
type RaftServer struct {
	// ID is the server's raft ID.
	ID string
	// Node is the server's gossip member name, or "(unknown)".
	Node string
	// Address is the server's raft (RPC) address, host:port.
	Address string
	// Leader is true for the current leader.
	Leader bool
	// Voter is true for a server that votes in elections.
	Voter bool
	// RaftProtocol is the raft protocol version the server speaks.
	RaftProtocol string
}

// RaftConfiguration is the raft membership at a raft index.
type RaftConfiguration struct {
	Servers []*RaftServer
	Index   uint64
}

// RaftGetConfiguration returns the raft membership
// (GET /v1/operator/raft/configuration), from the leader unless
// q.AllowStale.
func (op *Operator) RaftGetConfiguration(q *QueryOptions) (*RaftConfiguration, error) {
	var out RaftConfiguration
	if _, err := op.client.query("/v1/operator/raft/configuration", &out, q); err != nil {
		return nil, err
	}
	return &out, nil
}

// RaftRemovePeerByID removes the server with raft ID id from raft. A
// server still alive in the gossip pool is added back by the leader: this
// is for servers that are gone for good.
func (op *Operator) RaftRemovePeerByID(id string, w *WriteOptions) error {
	return op.removePeer(url.Values{"id": {id}}, w)
}

// RaftRemovePeerByAddress removes the server at raft address addr
// (host:port) from raft.
func (op *Operator) RaftRemovePeerByAddress(addr string, w *WriteOptions) error {
	return op.removePeer(url.Values{"address": {addr}}, w)
}

func (op *Operator) removePeer(v url.Values, w *WriteOptions) error {
	_, err := op.client.write(http.MethodDelete, "/v1/operator/raft/peer?"+v.Encode(), nil, nil, w)
	return err
}

// Metrics returns the agent's metrics (GET /v1/metrics) as the agent wrote
// them: go-metrics' JSON summary, or the Prometheus text format with
// q.Params["format"] = "prometheus".
func (op *Operator) Metrics(q *QueryOptions) ([]byte, error) {
	r, err := op.client.newRequest(http.MethodGet, "/v1/metrics")
	if err != nil {
		return nil, err
	}
	r.applyQuery(q)
	resp, _, err := op.client.do(r)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	return io.ReadAll(resp.Body)
}

// PreemptionConfig says which schedulers may preempt allocations.
type PreemptionConfig struct {
	SystemSchedulerEnabled   bool
	SysBatchSchedulerEnabled bool
	BatchSchedulerEnabled    bool
	ServiceSchedulerEnabled  bool
}

// SchedulerConfiguration is the cluster's scheduler configuration.
type SchedulerConfiguration struct {
	SchedulerAlgorithm            string
	PreemptionConfig              PreemptionConfig
	MemoryOversubscriptionEnabled bool
	RejectJobRegistration         bool
	PauseEvalBroker               bool
	NodeLimitForFeasibilityChecks uint
	CreateIndex                   uint64
	ModifyIndex                   uint64
}

// SchedulerConfigurationResponse is the body of
// GET /v1/operator/scheduler/configuration.
type SchedulerConfigurationResponse struct {
	SchedulerConfig *SchedulerConfiguration
	Index           uint64
}

// SchedulerSetConfigurationResponse says whether a write took effect and
// at which raft index.
type SchedulerSetConfigurationResponse struct {
	Updated bool
	Index   uint64
}

// SchedulerGetConfiguration returns the scheduler configuration.
func (op *Operator) SchedulerGetConfiguration(q *QueryOptions) (*SchedulerConfigurationResponse, *QueryMeta, error) {
	var out SchedulerConfigurationResponse
	qm, err := op.client.query("/v1/operator/scheduler/configuration", &out, q)
	if err != nil {
		return nil, nil, err
	}
	return &out, qm, nil
}

// SchedulerSetConfiguration writes the scheduler configuration.
func (op *Operator) SchedulerSetConfiguration(conf *SchedulerConfiguration, w *WriteOptions) (*SchedulerSetConfigurationResponse, *WriteMeta, error) {
	return op.schedulerPut("/v1/operator/scheduler/configuration", conf, w)
}

// SchedulerCASConfiguration writes the scheduler configuration only if the
// stored one is at conf.ModifyIndex; Updated is false otherwise.
func (op *Operator) SchedulerCASConfiguration(conf *SchedulerConfiguration, w *WriteOptions) (*SchedulerSetConfigurationResponse, *WriteMeta, error) {
	path := "/v1/operator/scheduler/configuration?cas=" + strconv.FormatUint(conf.ModifyIndex, 10)
	return op.schedulerPut(path, conf, w)
}

func (op *Operator) schedulerPut(path string, conf *SchedulerConfiguration, w *WriteOptions) (*SchedulerSetConfigurationResponse, *WriteMeta, error) {
	var out SchedulerSetConfigurationResponse
	wm, err := op.client.write(http.MethodPut, path, conf, &out, w)
	if err != nil {
		return nil, nil, err
	}
	return &out, wm, nil
}
