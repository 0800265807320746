package upstream

import (
	"github.com/nomad-edge/nomad/e2e/internal/harness"
)

// agentHead is harness.AgentHead, the head of every agent config here.
var agentHead = harness.AgentHead

// rawExecPlugin turns on the raw_exec driver, on our agents and upstream's
// alike.
const rawExecPlugin = `plugin "raw_exec" {
  config {
    enabled = true
  }
}
`
