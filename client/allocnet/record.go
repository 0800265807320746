package allocnet

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/nomad-edge/nomad/helper/atomicfile"
)

// record is what survives the agent about one allocation's network.
type record struct {
	// Conflist is the CNI configuration the network was set up with.
	Conflist json.RawMessage
	Status   Status
}

const recordExt = ".json"

func (m *Manager) recordDir() string { return filepath.Join(m.stateDir, "allocs") }

func (m *Manager) recordPath(allocID string) string {
	return filepath.Join(m.recordDir(), allocID+recordExt)
}

// readRecord returns an error wrapping os.ErrNotExist when there is none.
func (m *Manager) readRecord(allocID string) (*record, error) {
	b, err := os.ReadFile(m.recordPath(allocID))
	if err != nil {
		return nil, err
	}
	var r record
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("alloc %s: network record %s: %w", allocID, m.recordPath(allocID), err)
	}
	if r.Status.AllocID != allocID {
		return nil, fmt.Errorf("alloc %s: network record %s names alloc %q", allocID, m.recordPath(allocID), r.Status.AllocID)
	}
	return &r, nil
}

// writeRecord replaces the record atomically: a crash leaves the old one
// or the new one, never a torn file.
func (m *Manager) writeRecord(r *record) error {
	if err := os.MkdirAll(m.recordDir(), 0o700); err != nil {
		return fmt.Errorf("network records: %w", err)
	}
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	if err := atomicfile.Write(m.recordPath(r.Status.AllocID), b, 0o600); err != nil {
		return fmt.Errorf("network record: %w", err)
	}
	return nil
}

func (m *Manager) removeRecord(allocID string) error {
	if err := os.Remove(m.recordPath(allocID)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("network record: %w", err)
	}
	return nil
}

// recordIDs lists the allocations with a record.
func (m *Manager) recordIDs() ([]string, error) {
	ents, err := os.ReadDir(m.recordDir())
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("network records: %w", err)
	}
	var ids []string
	for _, e := range ents {
		if id, ok := strings.CutSuffix(e.Name(), recordExt); ok && checkAllocID(id) == nil {
			ids = append(ids, id)
		}
	}
	return ids, nil
}
