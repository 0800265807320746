package agent_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	nomadapi "github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/command/agent/agenttest"
)

// nextFrame returns the next log frame of a monitor, failing after 10s.
func nextFrame(t *testing.T, frames <-chan *nomadapi.StreamFrame, errs <-chan error) string {
	t.Helper()
	select {
	case f, ok := <-frames:
		must.True(t, ok, must.Sprint("the monitor ended"))
		return string(f.Data)
	case err := <-errs:
		t.Fatalf("monitor failed: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("no log line within 10s")
	}
	return ""
}

// mustOpen fails the test when the monitor could not start.
func mustOpen(t *testing.T, frames <-chan *nomadapi.StreamFrame, errs <-chan error) {
	t.Helper()
	if frames == nil {
		t.Fatalf("monitor did not start: %v", <-errs)
	}
}

// waitForLine reads frames until one contains want.
func waitForLine(t *testing.T, frames <-chan *nomadapi.StreamFrame, errs <-chan error, want string) string {
	t.Helper()
	for {
		if line := nextFrame(t, frames, errs); strings.Contains(line, want) {
			return line
		}
	}
}

// The official client's Agent().Monitor streams the agent's log at the
// level asked, even one below the agent's own log_level (WARN here): an
// operator debugs a running agent without restarting it.
func TestHTTP_AgentMonitor_StreamsLogLines(t *testing.T) {
	a := agenttest.NewDevAgent(t, nil)
	c := officialClient(t, a)
	stop := make(chan struct{})
	defer close(stop)
	frames, errs := c.Agent().Monitor(stop, &nomadapi.QueryOptions{Params: map[string]string{"log_level": "debug"}})
	mustOpen(t, frames, errs)

	_, _, err := c.Jobs().Info("no-such-job", nil)
	must.Error(t, err)
	line := waitForLine(t, frames, errs, "request rejected")
	must.StrContains(t, line, "[DEBUG]")
	must.StrContains(t, line, "/v1/job/no-such-job")

	jsonFrames, jsonErrs := c.Agent().Monitor(stop, &nomadapi.QueryOptions{Params: map[string]string{"log_level": "debug", "log_json": "true"}})
	mustOpen(t, jsonFrames, jsonErrs)
	_, _, err = c.Jobs().Info("another-missing-job", nil)
	must.Error(t, err)
	line = waitForLine(t, jsonFrames, jsonErrs, "another-missing-job")
	var entry map[string]any
	must.NoError(t, json.Unmarshal([]byte(line), &entry))
	must.Eq(t, "request rejected", entry["@message"])
	must.Eq(t, "debug", entry["@level"])
}

// A level or target the monitor cannot honour is a 400 naming it.
func TestHTTP_AgentMonitor_BadInput(t *testing.T) {
	a := agenttest.NewDevAgent(t, nil)
	for _, tc := range []struct{ query, want string }{
		{"log_level=loud", `Unknown log_level "loud"`},
		{"log_json=maybe", "log_json"},
		{"node_id=elsewhere", `node_id "elsewhere"`},
	} {
		resp, err := http.Get(a.HTTPAddr + "/v1/agent/monitor?" + tc.query)
		must.NoError(t, err)
		var b bytes.Buffer
		_, _ = b.ReadFrom(resp.Body)
		resp.Body.Close()
		must.Eq(t, http.StatusBadRequest, resp.StatusCode, must.Sprint(tc.query))
		must.StrContains(t, b.String(), tc.want)
	}
}
