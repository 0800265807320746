// Package pool carries msgpack RPC over yamux-multiplexed TCP connections:
// one long-lived connection per server address, one yamux stream per call.
//
// The dialer is an input so tests can route every connection through a
// network they can cut (partition, blackhole, reset) per node.
package pool
