package pool

// RPCNodeSession is the first byte of the connection a client opens so
// that servers can reach it although they cannot dial it (NAT): after the
// byte the client sends a structs.NodeSessionHello and reads a
// structs.NodeSessionAck, both msgpack; the rest is a yamux session in
// which the server opens the streams and each stream carries one HTTP/1.1
// exchange with the node's /v1/client API.
const RPCNodeSession byte = 0x06

// RPCClientHTTP is the first byte of a connection that carries one HTTP/1.1
// exchange with a server's /v1/client API: how a server that does not hold
// a node's session hands a request to the server that does, and how a
// client-only agent passes on a request for another node's allocation.
// The request carries its caller's ACL token and is checked again there.
const RPCClientHTTP byte = 0x07

// RPCNodeKeepalive is the first byte of a stream, inside an RPCMultiplex
// session, that carries a node's liveness session instead of one call (a
// call's stream starts with a msgpack map, never this byte): the node
// sends a structs.NodeSessionHello and reads a structs.NodeSessionAck,
// both msgpack, then writes one byte every few seconds, each answered by
// one byte. The server that holds the stream knows within seconds that a
// node went silent, whatever its heartbeat TTL; it tells the leader
// (NodeSession.Digest). The stream rides the connection the node's RPCs
// already use, so it costs no connection of its own.
const RPCNodeKeepalive byte = 0x08
