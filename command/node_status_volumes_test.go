package command

import (
	"encoding/json"
	"net/http"
	"os"
	"regexp"
	"testing"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/command/agent"
	"github.com/nomad-edge/nomad/command/agent/agenttest"
)

// A client's host_volume blocks reach its node: /v1/node/:id carries them
// as upstream's HostVolumes map (its JSON shape), node status names them,
// and -verbose lists them in upstream's "Host Volumes" section (Name,
// ReadOnly, Source).
func TestNodeStatus_HostVolumes(t *testing.T) {
	data, certs := t.TempDir(), t.TempDir()
	a := agenttest.NewDevAgent(t, func(c *agent.Config) {
		c.Client.HostVolumes = []*agent.HostVolumeConfig{{Name: "data", Path: data}, {Name: "certs", Path: certs, ReadOnly: true}}
	})
	nodeID := a.Client().NodeID()

	node, _, err := apiClient(t, a).Nodes().Info(nodeID, nil)
	must.NoError(t, err)
	must.MapLen(t, 2, node.HostVolumes)
	must.Eq(t, data, node.HostVolumes["data"].Path)
	must.False(t, node.HostVolumes["data"].ReadOnly)
	must.True(t, node.HostVolumes["certs"].ReadOnly)
	resp, err := http.Get(a.HTTPAddr + "/v1/node/" + nodeID)
	must.NoError(t, err)
	defer resp.Body.Close()
	var raw struct {
		HostVolumes map[string]map[string]any
	}
	must.NoError(t, json.NewDecoder(resp.Body).Decode(&raw))
	must.Eq(t, map[string]any{"Name": "data", "Path": data, "ReadOnly": false}, raw.HostVolumes["data"], must.Sprint("upstream's JSON shape"))

	code, out, errOut := run(t, a, nodeStatus, nodeID)
	must.Eq(t, 0, code, must.Sprint(errOut))
	must.RegexMatch(t, regexp.MustCompile(`(?m)^Host Volumes\s+= certs,data$`), out)

	code, out, errOut = run(t, a, nodeStatus, "-verbose", nodeID)
	must.Eq(t, 0, code, must.Sprint(errOut))
	must.RegexMatch(t, regexp.MustCompile(`(?m)^Host Volumes\nName\s+ReadOnly\s+Source\ncerts\s+true\s+`+regexp.QuoteMeta(certs)+`\ndata\s+false\s+`+regexp.QuoteMeta(data)+`$`), out)
}

// A host_volume whose path does not exist stops the agent, in upstream's
// words: a job placed for the volume would fail on every start there.
func TestAgent_HostVolumeMissingPath(t *testing.T) {
	cfg := agent.DevConfig()
	cfg.Ports.HTTP, cfg.Ports.RPC = 0, 0
	cfg.DataDir = t.TempDir()
	missing := t.TempDir() + "/nope"
	cfg.Client.HostVolumes = []*agent.HostVolumeConfig{{Name: "data", Path: missing}}
	a, err := agent.NewAgent(cfg, nil)
	if err == nil {
		_ = a.Shutdown()
	}
	must.ErrorContains(t, err, "failed to validate volume data, err: stat "+missing)
	_, statErr := os.Stat(missing)
	must.True(t, os.IsNotExist(statErr))
}
