package state

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/nomad-edge/nomad/helper/atomicfile"
)

// IdentityFile is the node's identity, kept beside the database (relative
// to the client's state dir) so that it outlives a damaged database: a
// client that had to start with an empty database still registers as the
// node it was, and the servers see that node come back instead of a new
// one while the old one times out as down.
var IdentityFile = filepath.Join("client", "node-identity.json")

// writeIdentity replaces the identity file atomically: a crash leaves the
// old file or the new one, never half of one.
func writeIdentity(path string, id NodeIdentity) error {
	data, err := json.Marshal(id)
	if err != nil {
		return err
	}
	if err := atomicfile.Write(path, data, 0o600); err != nil {
		return fmt.Errorf("writing node identity: %w", err)
	}
	return nil
}

// readIdentity returns the identity in path; a missing file is the zero
// identity, not an error.
func readIdentity(path string) (NodeIdentity, error) {
	var id NodeIdentity
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return id, nil
	}
	if err != nil {
		return id, fmt.Errorf("reading node identity: %w", err)
	}
	if err := json.Unmarshal(data, &id); err != nil {
		return NodeIdentity{}, fmt.Errorf("reading node identity %s: %w", path, err)
	}
	return id, nil
}
