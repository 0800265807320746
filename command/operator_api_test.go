package command

import (
	"strings"
	"testing"

	"github.com/hashicorp/cli"
	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/command/agent/agenttest"
)

// operator api sends any request with the CLI's settings and prints the
// answer: a read, a body piped in (which makes it a POST), a refused path
// (exit 1, the body on stderr), and a dry run that shows the request
// without the token's value. Operators script the API with it, the event
// stream included.
func TestOperatorAPI(t *testing.T) {
	a := agenttest.NewDevAgent(t, nil)
	apiCmd := func(stdin string) func(Meta) cli.Command {
		return func(m Meta) cli.Command {
			c := &OperatorAPICommand{Meta: m}
			if stdin != "" {
				c.Stdin = strings.NewReader(stdin)
			}
			return c
		}
	}

	code, out, errOut := run(t, a, apiCmd(""), "/v1/jobs")
	must.Eq(t, 0, code, must.Sprint(errOut))
	must.Eq(t, "[]\n", out)

	code, out, errOut = run(t, a, apiCmd(`{"JobHCL": "job \"x\" {\n group \"g\" {\n task \"t\" {\n driver = \"mock_driver\"\n }\n }\n}"}`), "/v1/jobs/parse")
	must.Eq(t, 0, code, must.Sprint(errOut))
	must.StrContains(t, out, `"ID":"x"`)

	code, _, errOut = run(t, a, apiCmd(""), "-X", "GET", "/v1/job/missing")
	must.Eq(t, 1, code)
	must.StrContains(t, errOut, "job not found")

	code, out, _ = run(t, a, apiCmd("{}"), "-dryrun", "-token=s3cret", "-H", "Accept: application/json", "-filter", `Status == "running"`, "/v1/jobs")
	must.Eq(t, 0, code)
	must.StrContains(t, out, "curl -X POST -H 'Accept: application/json' -H \"X-Nomad-Token: ${NOMAD_TOKEN}\" --data-binary @- '"+a.HTTPAddr+"/v1/jobs?filter=Status+%3D%3D+%22running%22'")
	must.StrNotContains(t, out, "s3cret")

	code, _, errOut = run(t, a, apiCmd(""), "-H", "no-colon", "/v1/jobs")
	must.Eq(t, 1, code)
	must.StrContains(t, errOut, `header "no-colon"`)
}
