package api

import (
	"io"
	"net/http"
	"net/url"
)

// GC makes the node destroy its terminal allocations now, whatever its
// gc_* thresholds (GET /v1/client/gc?node_id=); "" is the node of the
// agent the client talks to. The answer has no body, as upstream's.
func (n *Nodes) GC(nodeID string, q *QueryOptions) error {
	path := "/v1/client/gc"
	if nodeID != "" {
		path += "?node_id=" + url.QueryEscape(nodeID)
	}
	return n.client.queryNoBody(path, q)
}

// GcAlloc makes the node of a terminal allocation destroy it now
// (GET /v1/client/allocation/:id/gc).
func (n *Nodes) GcAlloc(allocID string, q *QueryOptions) error {
	return n.client.queryNoBody("/v1/client/allocation/"+pathID(allocID)+"/gc", q)
}

// GC is Nodes.GcAlloc of the allocation.
func (a *Allocations) GC(alloc *Allocation, q *QueryOptions) error {
	return a.client.queryNoBody("/v1/client/allocation/"+pathID(alloc.ID)+"/gc", q)
}

// queryNoBody is a GET whose answer carries nothing but its status.
func (c *Client) queryNoBody(path string, q *QueryOptions) error {
	r, err := c.newRequest(http.MethodGet, path)
	if err != nil {
		return err
	}
	r.applyQuery(q)
	resp, _, err := c.do(r)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return nil
}
