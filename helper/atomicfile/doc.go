// Package atomicfile writes a file so that a crash at any instant leaves
// its old content or its new, never half of it: the data goes to a
// temporary file beside it, is synced to disk, and is renamed over the
// file, and the directory is synced so the rename itself survives a power
// cut. One writer for every file whose loss or tearing costs the agent
// its identity or state: the servers' identity and raft node ID, the
// keystore, the client's node identity, its network records and its
// artifact cache's records.
package atomicfile
