package upstream

import (
	"fmt"

	"github.com/nomad-edge/nomad/e2e/internal/harness"
)

// agentHead is the top of an agent's config in these tests: its data dir
// (harness.DataDirVar for the one the harness makes), its name ("" for
// none), its listeners on loopback, and for an upstream agent what it
// needs there (harness.UpstreamOnLoopback). The caller adds the server
// or client blocks.
func agentHead(dataDir, name string, p harness.Ports, upstream bool) string {
	head := fmt.Sprintf("data_dir  = %q\nbind_addr = \"127.0.0.1\"\n", dataDir)
	if name != "" {
		head += fmt.Sprintf("name      = %q\n", name)
	}
	head += fmt.Sprintf("ports {\n  http = %d\n  rpc  = %d\n  serf = %d\n}\n", p.HTTP, p.RPC, p.Serf)
	if upstream {
		head += harness.UpstreamOnLoopback
	}
	return head
}

// rawExecPlugin turns on the raw_exec driver, on our agents and upstream's
// alike.
const rawExecPlugin = `plugin "raw_exec" {
  config {
    enabled = true
  }
}
`
