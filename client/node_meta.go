package client

import (
	"errors"
	"fmt"
	"maps"

	"github.com/nomad-edge/nomad/nomad/structs"
)

// ErrEmptyMetaKey refuses a metadata change with an empty key.
var ErrEmptyMetaKey = errors.New("node metadata keys must not be empty")

// NodeMeta returns the node's metadata: the config's, what was applied at
// runtime, and the merge the node registers with.
func (c *Client) NodeMeta() *structs.NodeMetaResponse {
	c.nodeMu.RLock()
	defer c.nodeMu.RUnlock()
	return &structs.NodeMetaResponse{
		Meta:    maps.Clone(c.node.Meta),
		Dynamic: copyDynamicMeta(c.dynamicMeta),
		Static:  nonNil(maps.Clone(c.cfg.Meta)),
	}
}

// ApplyNodeMeta changes the node's dynamic metadata (nil unsets a key),
// persists it, so that a restarted client registers with it, and has the
// node re-registered so that the servers (and the scheduler's
// constraints on ${meta.*}) see it. While the servers are unreachable the
// change waits on the client, as every node update does.
func (c *Client) ApplyNodeMeta(changes map[string]*string) (*structs.NodeMetaResponse, error) {
	for k := range changes {
		if k == "" {
			return nil, ErrEmptyMetaKey
		}
	}
	// metaMu orders applies; the write happens outside nodeMu, which
	// every loop of the client takes.
	c.metaMu.Lock()
	defer c.metaMu.Unlock()
	c.nodeMu.RLock()
	next := copyDynamicMeta(c.dynamicMeta)
	c.nodeMu.RUnlock()
	maps.Copy(next, copyDynamicMeta(changes))
	if err := c.db.PutNodeMeta(next); err != nil {
		return nil, fmt.Errorf("persisting node metadata: %w", err)
	}
	c.nodeMu.Lock()
	c.dynamicMeta = next
	c.node.Meta = mergeMeta(c.cfg.Meta, next)
	c.nodeMu.Unlock()
	signal(c.nodeChanged)
	return c.NodeMeta(), nil
}

// mergeMeta lays dynamic over static: a value sets the key, nil removes it.
func mergeMeta(static map[string]string, dynamic map[string]*string) map[string]string {
	out := nonNil(maps.Clone(static))
	for k, v := range dynamic {
		if v == nil {
			delete(out, k)
		} else {
			out[k] = *v
		}
	}
	return out
}

func copyDynamicMeta(m map[string]*string) map[string]*string {
	out := make(map[string]*string, len(m))
	for k, v := range m {
		if v != nil {
			s := *v
			v = &s
		}
		out[k] = v
	}
	return out
}

func nonNil(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}
