package agent

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/nomad-edge/nomad/client/allocrunner"
	"github.com/nomad-edge/nomad/drivers"
)

// allocRestartRequest is the body of /v1/client/allocation/{id}/restart,
// as upstream's AllocationRestartRequest.
type allocRestartRequest struct {
	TaskName string
	AllTasks bool
}

// allocSignalRequest is the body of /v1/client/allocation/{id}/signal.
type allocSignalRequest struct {
	Task   string
	Signal string
}

// decodeSmallBody decodes an optional JSON body of a few fields.
func decodeSmallBody(r *http.Request, v any) error {
	err := json.NewDecoder(io.LimitReader(r.Body, 64<<10)).Decode(v)
	if err != nil && !errors.Is(err, io.EOF) {
		return codedErrorf(http.StatusBadRequest, "Invalid request body: %v", err)
	}
	return nil
}

// taskOpError maps the task runner's refusals to statuses.
func taskOpError(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, allocrunner.ErrUnknownTask):
		return codedErrorf(http.StatusNotFound, "%v", err)
	case errors.Is(err, drivers.ErrUnknownSignal):
		return codedErrorf(http.StatusBadRequest, "%v", err)
	case errors.Is(err, allocrunner.ErrTaskNotRunning), errors.Is(err, allocrunner.ErrNotSupported):
		return codedErrorf(http.StatusBadRequest, "%v", err)
	}
	return err
}

// allocRestart handles PUT /v1/client/allocation/{alloc}/restart: the
// named task, or all of them, restart in place.
func (s *HTTPServer) allocRestart(w http.ResponseWriter, r *http.Request, ar *allocrunner.AllocRunner) error {
	var req allocRestartRequest
	if err := decodeSmallBody(r, &req); err != nil {
		return err
	}
	if req.TaskName == "" {
		req.TaskName = r.URL.Query().Get("task")
	}
	task := req.TaskName
	if req.AllTasks {
		task = ""
	}
	if err := taskOpError(ar.Restart(task)); err != nil {
		return err
	}
	return writeJSON(w, struct{}{})
}

// allocSignal handles PUT /v1/client/allocation/{alloc}/signal. The
// default signal is SIGKILL, as upstream's.
func (s *HTTPServer) allocSignal(w http.ResponseWriter, r *http.Request, ar *allocrunner.AllocRunner) error {
	var req allocSignalRequest
	if err := decodeSmallBody(r, &req); err != nil {
		return err
	}
	if req.Signal == "" {
		req.Signal = "SIGKILL"
	}
	if err := taskOpError(ar.Signal(req.Task, req.Signal)); err != nil {
		return err
	}
	return writeJSON(w, struct{}{})
}

// allocResourceUsage is upstream's AllocResourceUsage: the allocation's
// usage, the sum of its tasks'.
type allocResourceUsage struct {
	ResourceUsage *drivers.ResourceUsage
	Tasks         map[string]*drivers.TaskResourceUsage
	Timestamp     int64
}

// allocStats handles GET /v1/client/allocation/{alloc}/stats: CPU and
// memory of each task as its driver measures them (a cgroup, /proc, the
// container engine). A task that is not running, or whose driver measures
// nothing (mock_driver), has empty usage.
func (s *HTTPServer) allocStats(w http.ResponseWriter, r *http.Request, ar *allocrunner.AllocRunner) error {
	now := time.Now()
	mhz := s.cpuMHzPerCore()
	out := allocResourceUsage{
		ResourceUsage: drivers.NewResourceUsage(),
		Tasks:         map[string]*drivers.TaskResourceUsage{},
		Timestamp:     now.UnixNano(),
	}
	for _, tr := range ar.Tasks() {
		tu, err := tr.Stats()
		if err != nil {
			s.logger.Debug("reading task stats", "alloc_id", ar.ID(), "task", tr.Name(), "error", err)
		}
		if err != nil || tu == nil {
			tu = &drivers.TaskResourceUsage{ResourceUsage: drivers.NewResourceUsage(), Timestamp: now.UnixNano()}
		}
		withTicks(tu.ResourceUsage, mhz)
		for _, p := range tu.Pids {
			withTicks(p, mhz)
		}
		out.ResourceUsage.Add(tu.ResourceUsage)
		out.Tasks[tr.Name()] = tu
	}
	return writeJSON(w, out)
}

// withTicks fills TotalTicks, the CPU use in MHz that `alloc status -stats`
// sets against the task's `cpu`: drivers measure percent of a core, the
// client knows the cores' clock.
func withTicks(u *drivers.ResourceUsage, mhzPerCore float64) {
	if u != nil && u.CpuStats != nil {
		u.CpuStats.TotalTicks = u.CpuStats.Percent / 100 * mhzPerCore
	}
}

// fallbackMHzPerCore stands in for a node whose CPU frequency is unknown,
// as the client's fingerprint assumes.
const fallbackMHzPerCore = 1000

// cpuMHzPerCore is this node's fingerprinted clock rate.
func (s *HTTPServer) cpuMHzPerCore() float64 {
	if s.agent == nil || s.agent.client == nil {
		return fallbackMHzPerCore
	}
	if n := s.agent.client.Node(); n != nil {
		if f, err := strconv.ParseFloat(n.Attributes["cpu.frequency"], 64); err == nil && f > 0 {
			return f
		}
	}
	return fallbackMHzPerCore
}
