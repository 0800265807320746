package agent_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/command/agent/agenttest"
)

// The hostile requests of issue 5, each once a crash or an out-of-memory,
// sent to a real agent: each is a 400 naming what is wrong, nothing is
// registered, and the agent keeps answering.
func TestHTTP_HostileRequestsAreRefused(t *testing.T) {
	a := agenttest.NewDevAgent(t, nil)
	c := officialClient(t, a)

	parens := strings.Repeat("(", 100_000) + "1" + strings.Repeat(")", 100_000)
	hcl, err := json.Marshal(map[string]string{"JobHCL": `job "x" { group "g" { task "t" { driver = "mock_driver"
  config { v = ` + parens + ` } } } }`})
	must.NoError(t, err)
	code, body := rawRequest(t, http.MethodPost, a.HTTPAddr+"/v1/jobs/parse", string(hcl))
	must.Eq(t, http.StatusBadRequest, code)
	must.StrContains(t, body, "input.hcl:2:")
	must.StrContains(t, body, "nesting deeper than 64 levels")

	deep := strings.Repeat(`{"a":`, 40_000) + "1" + strings.Repeat("}", 40_000)
	code, body = rawRequest(t, http.MethodPut, a.HTTPAddr+"/v1/jobs",
		`{"Job": {"ID": "deep", "TaskGroups": [{"Name": "g", "Tasks": [{"Name": "t", "Driver": "mock_driver", "Config": `+deep+`}]}]}}`)
	must.Eq(t, http.StatusBadRequest, code)
	must.StrContains(t, body, "nesting deeper than 64 levels")

	huge := mockJob("huge", "mock_driver", nil)
	huge.TaskGroups[0].Count = new(1_000_000_000)
	_, _, err = c.Jobs().Register(huge, nil)
	status, msg := statusOf(t, err)
	must.Eq(t, http.StatusBadRequest, status)
	must.StrContains(t, msg, "Task group web validation failed: Task group count 1000000000 exceeds the maximum of 10000")

	escape := mockJob("escape", "mock_driver", nil)
	escape.TaskGroups[0].Tasks[0].Name = "../../x"
	_, _, err = c.Jobs().Register(escape, nil)
	status, msg = statusOf(t, err)
	must.Eq(t, http.StatusBadRequest, status)
	must.StrContains(t, msg, `Task name "../../x" must not contain "/"`)

	jobs, _, err := c.Jobs().List(nil)
	must.NoError(t, err)
	must.SliceEmpty(t, jobs)
	code, _ = rawRequest(t, http.MethodGet, a.HTTPAddr+"/v1/agent/health", "")
	must.Eq(t, http.StatusOK, code)
}

// JSON `null` where a group, task or constraint belongs is a 400 naming
// the hole, through every door that takes a job, never a panic.
func TestHTTP_NullEntriesRefused(t *testing.T) {
	a := agenttest.NewDevAgent(t, nil)
	for _, body := range []string{
		`{"Job": {"ID": "n", "TaskGroups": [null]}}`,
		`{"Job": {"ID": "n", "TaskGroups": [{"Name": "g", "Tasks": [null]}]}}`,
		`{"Job": {"ID": "n", "Constraints": [null], "TaskGroups": [{"Name": "g", "Tasks": [{"Name": "t", "Driver": "mock_driver", "Affinities": [null]}]}]}}`,
	} {
		for _, path := range []string{"/v1/jobs", "/v1/validate/job"} {
			code, msg := rawRequest(t, http.MethodPut, a.HTTPAddr+path, body)
			if path == "/v1/validate/job" && code == http.StatusOK {
				must.StrContains(t, msg, "null", must.Sprintf("%s %s", path, body))
				continue
			}
			must.Eq(t, http.StatusBadRequest, code, must.Sprintf("%s %s: %s", path, body, msg))
			must.StrContains(t, msg, "null")
		}
	}
}
