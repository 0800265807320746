package structs

// NodeSessionHello opens a node session (pool.RPCNodeSession): the node
// proves who it is with its secret, as its node RPCs do.
type NodeSessionHello struct {
	NodeID   string
	SecretID string
}

// NodeSessionAck answers a NodeSessionHello: an empty Error accepts the
// session.
type NodeSessionAck struct {
	Error string
}

// NodeConnRequest asks a server whether it holds a node's session.
type NodeConnRequest struct {
	NodeID string
	QueryOptions
}

// NodeConnResponse says whether the server holds the session.
type NodeConnResponse struct {
	Connected bool
	QueryMeta
}
