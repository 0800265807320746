// Package upstreamrpc speaks upstream Nomad's client RPC protocol (as of
// v1.6.5) at the edge of our servers, so that an upstream client agent can
// register with them, run its allocations and heartbeat while an operator
// swaps binaries one agent at a time (docs: operations/upgrading.md).
//
// What it owns: recognising an upstream connection on the RPC port,
// upstream's framing on it (a yamux session whose streams each begin with
// a protocol byte and then carry msgpack net/rpc calls, several in turn on
// one stream), upstream's msgpack settings, the list of client RPCs an
// upstream client may make, and the translation between upstream's shapes
// and ours. The other way, it answers the /v1/client HTTP exchanges the
// servers send down a node's session (ClientAPI) by upstream's client
// RPCs on the connection the upstream client opened: streaming RPCs
// (protocol byte, a header naming the method, the request, an
// acknowledgement, then frames) for logs, file contents and exec (a
// websocket bridged to Allocations.Exec), msgpack calls for listings,
// stats, signal and restart. It also reads upstream's snapshot state
// (ReadSnapshotState: the state.bin of an upstream snapshot archive) into
// our model, with the table of upstream's record type bytes and a report
// of every record it does not carry; the archive around it and the
// restore are the snapshot commands'. Nothing outside this package knows
// upstream's formats.
//
// Which way it calls: it imports the model (nomad/structs) and
// helper/wsclose, and nothing else of ours. The server hands it each accepted upstream connection and the
// net/rpc server whose endpoints serve it (bound to the connection's peer,
// exactly as for our own clients, so node secrets, ACL tokens and mTLS
// checks apply unchanged); the package decodes each call into our request
// type, the endpoint runs it, and the reply is translated back. It never
// reaches into the server or the state store.
package upstreamrpc
