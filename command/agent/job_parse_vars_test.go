package agent_test

import (
	"net/http"
	"testing"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/api"
	"github.com/nomad-edge/nomad/command/agent/agenttest"
)

// /v1/jobs/parse gives the job file's variables the values in Variables
// (var-file content, as upstream's JobsParseRequest), reports bad ones at
// their position, and keeps the file functions off: the agent's files are
// not the caller's.
func TestHTTP_ParseVariables(t *testing.T) {
	a := agenttest.NewDevAgent(t, nil)
	c, err := api.NewClient(&api.Config{Address: a.HTTPAddr})
	must.NoError(t, err)
	src := `variable "count" {
  type = number
}
job "p" {
  group "g" {
    count = var.count
    task "t" {
      driver = "mock_driver"
    }
  }
}
`
	job, err := c.Jobs().ParseHCLOpts(&api.JobsParseRequest{JobHCL: src, Variables: "count = 4\n"})
	must.NoError(t, err)
	must.Eq(t, 4, *job.TaskGroups[0].Count)

	_, err = c.Jobs().ParseHCLOpts(&api.JobsParseRequest{JobHCL: src})
	must.ErrorContains(t, err, `input.hcl:1:1: variable "count" has no value`)

	_, err = c.Jobs().ParseHCLOpts(&api.JobsParseRequest{JobHCL: src, Variables: "count = \"x\"\n"})
	must.ErrorContains(t, err, `<Variables>:1:9: invalid value for variable "count" from <Variables>: the type is number`)

	_, err = c.Jobs().ParseHCLOpts(&api.JobsParseRequest{JobHCL: src, Variables: "count = 1\nother = 2\n"})
	must.ErrorContains(t, err, `<Variables>:2:1: undefined variable "other"`)

	code, body := rawRequest(t, http.MethodPost, a.HTTPAddr+"/v1/jobs/parse",
		`{"JobHCL": "job \"f\" {\n  meta = { a = file(\"/etc/hostname\") }\n}\n"}`)
	must.Eq(t, http.StatusBadRequest, code)
	must.StrContains(t, body, "file functions are disabled here")
}
