package api

import "net/url"

// NodeMetaApplyRequest changes a node's dynamic metadata: a key with a
// value sets it, a key with nil unsets it (a config key included). An
// empty NodeID means the node of the agent the request is sent to.
type NodeMetaApplyRequest struct {
	NodeID string
	Meta   map[string]*string
}

// NodeMetaResponse is a node's metadata as its client holds it: Meta the
// merge it registers with, Static its config's meta block, Dynamic what
// was applied since (nil values are unset keys).
type NodeMetaResponse struct {
	Meta    map[string]string
	Dynamic map[string]*string
	Static  map[string]string
}

// NodeMeta is the handle on /v1/client/metadata.
type NodeMeta struct {
	client *Client
}

// Meta returns the handle on a node's metadata.
func (n *Nodes) Meta() *NodeMeta { return &NodeMeta{client: n.client} }

// Apply changes a node's dynamic metadata (POST /v1/client/metadata).
func (m *NodeMeta) Apply(req *NodeMetaApplyRequest, w *WriteOptions) (*NodeMetaResponse, error) {
	var out NodeMetaResponse
	if _, err := m.client.write("POST", "/v1/client/metadata", req, &out, w); err != nil {
		return nil, err
	}
	return &out, nil
}

// Read returns a node's metadata (GET /v1/client/metadata); an empty
// nodeID reads the node of the agent asked.
func (m *NodeMeta) Read(nodeID string, q *QueryOptions) (*NodeMetaResponse, error) {
	var out NodeMetaResponse
	path := "/v1/client/metadata"
	if nodeID != "" {
		path += "?node_id=" + url.QueryEscape(nodeID)
	}
	if _, err := m.client.query(path, &out, q); err != nil {
		return nil, err
	}
	return &out, nil
}
