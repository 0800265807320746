// Package connlimit caps the connections one remote IP may hold open on a
// listener, the way upstream's limits.http_max_conns_per_client and
// limits.rpc_max_conns_per_client do. The agent's HTTP listener and the
// server's RPC accept loop share it.
package connlimit
