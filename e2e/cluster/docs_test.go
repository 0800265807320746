package cluster

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/command/agent"
	"github.com/nomad-edge/nomad/e2e/internal/harness"
)

const guide = "../../website/content/docs/production-cluster.md"

// guideFiles returns the guide's HCL blocks by the file name in their
// first line ("# server-1.hcl").
func guideFiles(t *testing.T) map[string]string {
	t.Helper()
	src, err := os.ReadFile(guide)
	must.NoError(t, err)
	files := map[string]string{}
	for _, b := range strings.Split(string(src), "```hcl\n")[1:] {
		body, _, ok := strings.Cut(b, "```")
		must.True(t, ok, must.Sprint("an unterminated hcl block in the guide"))
		first, _, _ := strings.Cut(body, "\n")
		name := strings.Fields(strings.TrimPrefix(first, "#"))
		must.SliceNotEmpty(t, name, must.Sprintf("an hcl block in the guide starts with its file name: %q", first))
		files[name[0]] = body
	}
	return files
}

var (
	guidePort = regexp.MustCompile(`\b[4-7]64[678]\b`)
	portKey   = regexp.MustCompile(`(?m)^\s*(http|rpc|serf)\s*=\s*(\d+)`)
)

// The guide's files are what an operator copies: every one parses, and
// the one-machine lab (three servers and a client) runs as written, but
// for its ports and data dirs, which are moved to free ones so that test
// runs never collide with each other or with an agent on the machine.
func TestDocs_ProductionClusterGuideRuns(t *testing.T) {
	files := guideFiles(t)
	for name, body := range files {
		_, err := agent.ParseConfig(name, []byte(body))
		must.NoError(t, err, must.Sprintf("%s in %s:\n%s", name, guide, body))
	}

	c := newCluster(t, clusterOpts{})
	moved := map[string]string{}
	for _, name := range []string{"server-1.hcl", "server-2.hcl", "server-3.hcl", "client-1.hcl"} {
		body, ok := files[name]
		must.True(t, ok, must.Sprintf("the guide shows %s", name))
		body = guidePort.ReplaceAllStringFunc(body, func(p string) string {
			if _, ok := moved[p]; !ok {
				port := harness.FreePort(t)
				if strings.HasSuffix(p, "8") { // serf: TCP and UDP
					port = harness.FreeSerfPort(t)
				}
				moved[p] = strconv.Itoa(port)
			}
			return moved[p]
		})
		body = strings.ReplaceAll(body, "/tmp/nomad-lab/", c.agents.Dir+"/lab/")
		var p harness.Ports
		for _, m := range portKey.FindAllStringSubmatch(body, -1) {
			n, _ := strconv.Atoi(m[2])
			switch m[1] {
			case "http":
				p.HTTP = n
			case "rpc":
				p.RPC = n
			case "serf":
				p.Serf = n
			}
		}
		a := c.agents.Add(harness.AgentConfig{Name: strings.TrimSuffix(name, ".hcl"), Ports: p, Config: body})
		if strings.HasPrefix(name, "server") {
			c.servers = append(c.servers, a)
		} else {
			c.clients = append(c.clients, a)
		}
	}
	t.Logf("the guide's servers elected a leader %v after start", c.startServers())
	c.waitVoters(10 * time.Second)
	c.startClients()
	c.registerJob(c.servers[1], sleepJob("guide", 1))
}

// The README's cluster files parse as they are shown.
func TestDocs_ReadmeClusterFilesParse(t *testing.T) {
	src, err := os.ReadFile("../../README.md")
	must.NoError(t, err)
	blocks := strings.Split(string(src), "```hcl\n")[1:]
	must.SliceNotEmpty(t, blocks)
	for i, b := range blocks {
		body, _, ok := strings.Cut(b, "```")
		must.True(t, ok)
		_, err := agent.ParseConfig(fmt.Sprintf("README-block-%d.hcl", i+1), []byte(body))
		must.NoError(t, err, must.Sprint(body))
	}
}
