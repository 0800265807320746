// Package tlsutil turns the agent's `tls` block into crypto/tls
// configurations for each side of each link (RPC and raft between agents,
// HTTPS for the API), says whether a verified peer is a server, and makes
// the CA and certificates that `nomad tls ca create` and
// `nomad tls cert create` write.
//
// Naming follows upstream Nomad: a server's certificate carries the DNS
// name server.<region>.nomad, a client's client.<region>.nomad, a CLI
// user's cli.<region>.nomad. Holding a CA-signed certificate is what
// lets an agent in; the name in it is what makes it a server.
package tlsutil
