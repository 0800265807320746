// Package snapshot reads and writes the operator snapshot archive, the file
// `nomad operator snapshot save` writes and `restore` reads: a gzip'd tar
// holding meta.json (the raft snapshot's metadata, as JSON), state.bin (the
// FSM's persist stream) and SHA256SUMS (a sha256sum(1) listing of the
// other two), in that order, as upstream Nomad writes it.
//
// Both directions stream: Write copies state.bin through as it comes, and
// Read spools it to a temporary file while hashing it, so that nothing of a
// snapshot is handed on before every checksum has been verified. The
// package knows nothing of what state.bin holds beyond its first byte, which
// tells ours from upstream's (Sniff).
package snapshot
