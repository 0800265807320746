package upstreamrpc

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/rpc"
	"strconv"
	"strings"
)

// maxBody bounds the JSON body of a signal or restart request.
const maxBody = 64 << 10

// queryOptions are the fields of upstream's QueryOptions its servers set
// on the client RPCs they make (captured: testdata/*-request.msgpack);
// upstream embeds them in each request, and so does msgpack's encoding.
type queryOptions struct {
	Region     string
	Namespace  string
	AllowStale bool
	AuthToken  string
}

func newQueryOptions(r *http.Request) queryOptions {
	q := r.URL.Query()
	ns := q.Get("namespace")
	if ns == "" {
		ns = "default"
	}
	return queryOptions{Region: q.Get("region"), Namespace: ns, AllowStale: true, AuthToken: r.Header.Get("X-Nomad-Token")}
}

// allocStatsRequest is upstream's AllocStatsRequest (Allocations.Stats).
type allocStatsRequest struct {
	AllocID string
	Task    string
	queryOptions
}

// nodeStatsRequest is upstream's NodeStatsRequest (ClientStats.Stats).
type nodeStatsRequest struct {
	NodeID string
	queryOptions
}

// allocSignalRequest is upstream's AllocSignalRequest (Allocations.Signal),
// and the body of our signal route.
type allocSignalRequest struct {
	AllocID string
	Task    string
	Signal  string
	queryOptions
}

// allocRestartRequest is upstream's AllocRestartRequest
// (Allocations.Restart), and the body of our restart route.
type allocRestartRequest struct {
	AllocID  string
	TaskName string
	AllTasks bool
	queryOptions
}

// The stats replies carry upstream's usage structs, whose JSON is what
// our HTTP API answers too (AllocResourceUsage, HostStats): they pass as
// decoded, field for field, without a model of ours in between.
type (
	allocStatsReply struct{ Stats map[string]any }
	nodeStatsReply  struct{ HostStats map[string]any }
)

// The client's answers to signal and restart; ours answer an empty object.
type genericReply struct{ Index uint64 }

func (c *ClientAPI) allocStats(w http.ResponseWriter, r *http.Request) {
	req := allocStatsRequest{AllocID: r.PathValue("alloc"), Task: r.URL.Query().Get("task"), queryOptions: newQueryOptions(r)}
	var reply allocStatsReply
	if err := c.call("Allocations.Stats", &req, &reply); err != nil {
		writeRPCError(w, "Allocations.Stats", err)
		return
	}
	writeJSON(w, reply.Stats)
}

func (c *ClientAPI) nodeStats(w http.ResponseWriter, r *http.Request) {
	id := r.URL.Query().Get("node_id")
	if id == "" {
		http.Error(w, "missing node_id: name the upstream node with ?node_id=", http.StatusBadRequest)
		return
	}
	req := nodeStatsRequest{NodeID: id, queryOptions: newQueryOptions(r)}
	var reply nodeStatsReply
	if err := c.call("ClientStats.Stats", &req, &reply); err != nil {
		writeRPCError(w, "ClientStats.Stats", err)
		return
	}
	writeJSON(w, reply.HostStats)
}

func (c *ClientAPI) allocSignal(w http.ResponseWriter, r *http.Request) {
	var req allocSignalRequest
	if err := decodeBody(r, &req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	req.AllocID, req.queryOptions = r.PathValue("alloc"), newQueryOptions(r)
	if req.Signal == "" {
		req.Signal = "SIGKILL" // as our client defaults it
	}
	c.lifecycle(w, "Allocations.Signal", &req)
}

func (c *ClientAPI) allocRestart(w http.ResponseWriter, r *http.Request) {
	var req allocRestartRequest
	if err := decodeBody(r, &req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	req.AllocID, req.queryOptions = r.PathValue("alloc"), newQueryOptions(r)
	if req.TaskName == "" {
		req.TaskName = r.URL.Query().Get("task")
	}
	c.lifecycle(w, "Allocations.Restart", &req)
}

func (c *ClientAPI) lifecycle(w http.ResponseWriter, method string, req any) {
	var reply genericReply
	if err := c.call(method, req, &reply); err != nil {
		writeRPCError(w, method, err)
		return
	}
	writeJSON(w, struct{}{})
}

// readAt is a file's bytes from offset, at most limit of them, as plain
// bytes: upstream's servers ask FileSystem.Stream for it, not following.
func (c *ClientAPI) readAt(w http.ResponseWriter, r *http.Request) {
	req, err := newFSRequest(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if req.Limit, err = int64Query(r, "limit"); err == nil && req.Limit <= 0 {
		err = errors.New("query parameter limit: must be above 0")
	}
	if err == nil && req.Offset < 0 {
		err = errors.New("query parameter offset: must not be negative")
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	req.Origin, req.Follow, req.PlainText = "start", false, true
	c.stream(w, r, "FileSystem.Stream", req)
}

func int64Query(r *http.Request, name string) (int64, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return 0, fmt.Errorf("query parameter %s: missing", name)
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("query parameter %s: %w", name, err)
	}
	return n, nil
}

// decodeBody reads a small JSON body into v; an empty body leaves v as is.
func decodeBody(r *http.Request, v any) error {
	if r.Body == nil || r.ContentLength == 0 {
		return nil
	}
	dec := json.NewDecoder(http.MaxBytesReader(nil, r.Body, maxBody))
	if err := dec.Decode(v); err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("request body: %w", err)
	}
	return nil
}

// writeRPCError answers a failed client RPC. Upstream's RPC carries its
// errors as strings only (net/rpc), so the status is read from the
// prefixes upstream's own HTTP API reads them by; anything else is 500.
func writeRPCError(w http.ResponseWriter, method string, err error) {
	code := http.StatusInternalServerError
	var se rpc.ServerError
	if errors.As(err, &se) {
		msg := string(se)
		switch {
		case strings.Contains(msg, "Unknown allocation"), strings.Contains(msg, "Unknown node"):
			code = http.StatusNotFound
		case strings.Contains(msg, "Permission denied"):
			code = http.StatusForbidden
		}
	}
	http.Error(w, fmt.Sprintf("%s on the upstream client: %v", method, err), code)
}
