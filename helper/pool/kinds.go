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
