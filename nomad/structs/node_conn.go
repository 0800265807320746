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

// NodeSessionDigestRequest is what a server tells the leader of the
// liveness sessions (pool.RPCNodeKeepalive) nodes hold with it: every
// change since its previous digest, or, when Full, every node it holds.
// Epoch names one run of the sending server and Seq numbers its digests
// within it, so that the leader notices a digest it missed and asks for
// a full one instead of guessing.
type NodeSessionDigestRequest struct {
	ServerID string
	Epoch    string
	Seq      uint64
	Full     bool
	// Held are nodes whose session the server holds now (on a full
	// digest: all of them); Lost those whose last session with it ended.
	Held []string
	Lost []string
	WriteRequest
}

// NodeSessionDigestResponse answers a digest: NeedFull asks the server to
// send a full digest next, because the leader does not know what came
// before this one (it just took over, or a digest went missing).
type NodeSessionDigestResponse struct {
	NeedFull bool
}
