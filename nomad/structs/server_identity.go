package structs

// ServerIdentityID is the ID of the one ServerIdentity row.
const ServerIdentityID = "servers"

// ServerIdentity is the secret the servers of a cluster share, in raft,
// to prove to one another that a connection comes from one of them: a
// caller that answers a connection's challenge with it may call the
// server-only RPCs (Eval.Dequeue, Plan.Submit, Keyring.Get...) and carry
// raft, whatever the TLS setting. The first leader writes it; it is never
// sent over the network, only keyed hashes of challenges are.
type ServerIdentity struct {
	ID     string
	Secret []byte

	CreateIndex uint64
	ModifyIndex uint64
}

// ServerIdentitySetRequest writes the servers' identity (ServerIdentitySet
// raft entry). The state store keeps the first one written: two leaders
// racing each other cannot change a secret the other servers already use.
type ServerIdentitySetRequest struct {
	Identity *ServerIdentity
	WriteRequest
}
