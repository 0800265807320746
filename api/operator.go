package api

import (
	"io"
	"net/http"
	"net/url"
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
