package client

import (
	"fmt"

	"github.com/nomad-edge/nomad/client/allocrunner"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// AllocRunner returns the runner of an allocation this client holds, for
// the operations an operator runs against it (logs, fs, restart, signal,
// stats, exec). An allocation the client does not hold wraps
// structs.ErrUnknownAlloc.
func (c *Client) AllocRunner(allocID string) (*allocrunner.AllocRunner, error) {
	c.allocMu.RLock()
	defer c.allocMu.RUnlock()
	ar, ok := c.allocs[allocID]
	if !ok {
		return nil, fmt.Errorf("%w: %s is not on this node", structs.ErrUnknownAlloc, allocID)
	}
	return ar, nil
}

// SecretID returns the node's secret, with which the agent opens the
// session the servers reach the node through.
func (c *Client) SecretID() string { return c.secretID() }
