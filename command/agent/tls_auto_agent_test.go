package agent_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	nomadapi "github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/command/agent"
	"github.com/nomad-edge/nomad/command/agent/agenttest"
	"github.com/nomad-edge/nomad/nomad/structs"
	"github.com/nomad-edge/nomad/testutil/wait"
)

// A client-only agent of tls.auto joins servers of tls.auto with nothing
// but an introduction token: the agent hands its pool, its node sessions
// and its client the node's credentials, so it registers, gets its
// certificate (kept under <data_dir>/client/tls), and runs work placed on
// it; its HTTP API answers by asking the servers over the same TLS.
func TestAgent_TLSAutoClientOnlyJoins(t *testing.T) {
	dev := agenttest.NewDevAgent(t, func(c *agent.Config) {
		c.TLSConfig = &agent.TLSConfig{Auto: true}
		c.Client.Enabled = false
	})
	srv := dev.Server()
	wait.Poll(t, 10*time.Second, "the cluster CA", func() (bool, string) {
		ca, err := srv.State().ActiveTLSCA(nil)
		return err == nil && ca != nil, "none yet"
	})
	var tok structs.ClientIntroductionTokenResponse
	must.NoError(t, srv.RPC("ACL.CreateClientIntroductionToken", &structs.ClientIntroductionTokenRequest{NodeName: "edge-1", TTL: 10 * time.Minute}, &tok))

	a := clientOnlyAgent(t, "edge-1", dev, func(c *agent.Config) {
		c.TLSConfig = &agent.TLSConfig{Auto: true}
		c.Client.IntroToken = tok.JWT
	})
	fi, err := os.Stat(filepath.Join(a.DataDir(), "client", "tls", "node.pem"))
	must.NoError(t, err)
	must.Eq(t, os.FileMode(0o600), fi.Mode().Perm())

	c, err := nomadapi.NewClient(&nomadapi.Config{Address: "http://" + a.HTTPAddr().String()})
	must.NoError(t, err)
	job := mockJob("edge-job", "mock_driver", map[string]any{"run_for": "5m"})
	_, _, err = c.Jobs().Register(job, nil)
	must.NoError(t, err)
	wait.Poll(t, 30*time.Second, "the job running on the tls.auto client", func() (bool, string) {
		allocs, _, err := c.Jobs().Allocations("edge-job", false, nil)
		if err != nil {
			return false, err.Error()
		}
		return len(allocs) == 1 && allocs[0].ClientStatus == "running" && allocs[0].NodeID == a.Client().NodeID(),
			fmt.Sprint(describeStubs(allocs))
	})
}
