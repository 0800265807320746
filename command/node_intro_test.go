package command

import (
	"strings"
	"testing"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/command/agent"
	"github.com/nomad-edge/nomad/command/agent/agenttest"
)

// `nomad node intro create` prints a signed token in upstream's words
// through POST /v1/acl/identity/client-introduction-token, and a -ttl
// past the servers' max_identity_ttl is refused naming the setting.
func TestNodeIntroCreate_CLI(t *testing.T) {
	a := agenttest.NewDevAgent(t, func(c *agent.Config) { c.Client.Enabled = false })
	create := aclCmd(func(m Meta) *NodeIntroCreateCommand { return &NodeIntroCreateCommand{Meta: m} })

	code, out, stderr := run(t, a, create, "-node-name=edge-1", "-node-pool=default", "-ttl=10m")
	must.Eq(t, 0, code, must.Sprint(stderr))
	must.StrContains(t, out, "Successfully generated client introduction token:")
	jwt := strings.TrimSpace(out[strings.LastIndex(out, "\n\n")+2:])
	must.Eq(t, 2, strings.Count(jwt, "."), must.Sprintf("not a JWT: %q", jwt))

	code, _, stderr = run(t, a, create, "-ttl=2h")
	must.Eq(t, 1, code)
	must.StrContains(t, stderr, "max_identity_ttl")
}
