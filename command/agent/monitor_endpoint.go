package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
)

// monitorBuffer is how many log lines a monitor holds for a slow reader
// before it drops lines: a stalled `nomad monitor` must never slow the
// agent's logging, which every subsystem does on its own goroutine.
const monitorBuffer = 512

// interceptable returns logger as a logger that log sinks can be attached
// to (what /v1/agent/monitor needs). A caller's plain logger is kept as
// the output through a forwarding sink, so nothing it logged changes.
func interceptable(logger hclog.Logger) hclog.InterceptLogger {
	if il, ok := logger.(hclog.InterceptLogger); ok {
		return il
	}
	// The same level, so IsDebug and the like answer as the caller's
	// logger would; the output goes through forwardSink alone.
	il := hclog.NewInterceptLogger(&hclog.LoggerOptions{Name: logger.Name(), Level: logger.GetLevel(), Output: io.Discard})
	il.RegisterSink(forwardSink{logger})
	return il
}

// forwardSink hands every line to the logger it wraps, under the name of
// the sub-logger that wrote it.
type forwardSink struct{ l hclog.Logger }

func (f forwardSink) Accept(name string, level hclog.Level, msg string, args ...any) {
	if level < f.l.GetLevel() {
		return
	}
	f.l.ResetNamed(name).Log(level, msg, args...)
}

// logMonitor is one monitor request's sink: formatted lines go to a
// bounded channel, and lines that do not fit are counted, not waited for.
type logMonitor struct {
	lines   chan []byte
	dropped atomic.Int64
	sink    hclog.SinkAdapter
}

func newLogMonitor(level hclog.Level, jsonFormat bool) *logMonitor {
	m := &logMonitor{lines: make(chan []byte, monitorBuffer)}
	m.sink = hclog.NewSinkAdapter(&hclog.LoggerOptions{Level: level, JSONFormat: jsonFormat, Output: m})
	return m
}

// Write receives one formatted entry from the sink.
func (m *logMonitor) Write(p []byte) (int, error) {
	select {
	case m.lines <- bytes.Clone(p):
	default:
		m.dropped.Add(1)
	}
	return len(p), nil
}

// monitorRequest is what GET /v1/agent/monitor was asked.
type monitorRequest struct {
	level hclog.Level
	json  bool
	plain bool
}

func parseMonitorRequest(s *HTTPServer, r *http.Request) (monitorRequest, error) {
	v := r.URL.Query()
	req := monitorRequest{level: hclog.Info}
	if l := v.Get("log_level"); l != "" {
		req.level = hclog.LevelFromString(l)
		if req.level == hclog.NoLevel || req.level == hclog.Off {
			return req, codedErrorf(http.StatusBadRequest, "Unknown log_level %q: use trace, debug, info, warn or error", l)
		}
	}
	for _, p := range []struct {
		name string
		dst  *bool
	}{{"log_json", &req.json}, {"plain", &req.plain}} {
		b, err := boolParam(r, p.name)
		if err != nil {
			return req, err
		}
		*p.dst = b
	}
	return req, nil
}

// isLocalAgent reports whether id names this agent's node (by ID or
// name) or this server (by name).
func (s *HTTPServer) isLocalAgent(id string) bool {
	if s.agent == nil {
		return false
	}
	if c := s.agent.client; c != nil && c.NodeID() == id {
		return true
	}
	name := s.agent.config.nodeName()
	return id == name || id == name+"."+s.agent.config.Region
}

// monitorFrame is upstream's StreamFrame as the official client decodes
// it: Data is base64 in JSON.
type monitorFrame struct {
	Data []byte `json:",omitempty"`
}

// agentMonitor handles GET /v1/agent/monitor: the agent's log lines at
// log_level and above, as JSON frames (or plain text with plain=true),
// until the client goes away.
func (s *HTTPServer) agentMonitor(w http.ResponseWriter, r *http.Request) (any, error) {
	req, err := parseMonitorRequest(s, r)
	if err != nil {
		return nil, err
	}
	il, ok := s.logger.(hclog.InterceptLogger)
	if !ok {
		return nil, codedErrorf(http.StatusNotImplemented, "this agent's logger cannot be monitored")
	}
	m := newLogMonitor(req.level, req.json)
	il.RegisterSink(m.sink)
	defer il.DeregisterSink(m.sink)

	if req.plain {
		w.Header().Set("Content-Type", "text/plain")
	} else {
		w.Header().Set("Content-Type", "application/json")
	}
	w.WriteHeader(http.StatusOK)
	write := frameWriter(w, req.plain)
	// An empty frame at once tells the client the stream is open.
	if err := write(nil); err != nil {
		return answered{}, nil
	}
	s.streamMonitor(r.Context(), m, write)
	return answered{}, nil
}

// streamMonitor copies m's lines to write until ctx ends or a write fails,
// saying so when lines were dropped.
func (s *HTTPServer) streamMonitor(ctx context.Context, m *logMonitor, write func([]byte) error) {
	heartbeat := time.NewTicker(eventHeartbeat)
	defer heartbeat.Stop()
	for {
		var line []byte
		select {
		case <-ctx.Done():
			return
		case line = <-m.lines:
		case <-heartbeat.C:
		}
		if n := m.dropped.Swap(0); n > 0 {
			line = append(fmt.Appendf(nil, "[WARN] monitor: dropped %d log lines the reader was too slow for\n", n), line...)
		}
		if err := write(line); err != nil {
			return
		}
	}
}

// frameWriter writes and flushes one frame (an empty one is a heartbeat).
func frameWriter(w http.ResponseWriter, plain bool) func([]byte) error {
	rc := http.NewResponseController(w)
	enc := json.NewEncoder(w)
	return func(p []byte) error {
		_ = rc.SetWriteDeadline(time.Now().Add(eventWriteTimeout))
		var err error
		switch {
		case plain && len(p) == 0:
		case plain:
			_, err = w.Write(p)
		default:
			err = enc.Encode(monitorFrame{Data: p})
		}
		if err != nil {
			return err
		}
		return rc.Flush()
	}
}
