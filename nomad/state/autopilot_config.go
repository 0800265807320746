package state

import (
	"fmt"

	"github.com/hashicorp/go-memdb"

	"github.com/nomad-edge/nomad/nomad/structs"
)

// TableAutopilotConfig holds the one autopilot configuration, once
// written (PUT /v1/operator/autopilot/configuration).
const TableAutopilotConfig = "autopilot_config"

// autopilotConfigRow is the stored row: memdb needs an id field.
type autopilotConfigRow struct {
	ID     string
	Config *structs.AutopilotConfig
}

func autopilotConfigTableSchema() *memdb.TableSchema {
	return &memdb.TableSchema{
		Name: TableAutopilotConfig,
		Indexes: map[string]*memdb.IndexSchema{
			indexID: {Name: indexID, Unique: true, Indexer: &memdb.StringFieldIndex{Field: "ID"}},
		},
	}
}

// AutopilotConfig returns the stored autopilot configuration and the index
// at which it was written, or nil at index 0 when none has been written
// (the servers then use their agent configuration's). The configuration
// returned must not be changed.
func (s *StateStore) AutopilotConfig(ws memdb.WatchSet) (uint64, *structs.AutopilotConfig, error) {
	watch, raw, err := s.db.Txn(false).FirstWatch(TableAutopilotConfig, indexID, schedulerConfigKey)
	if err != nil {
		return 0, nil, fmt.Errorf("autopilot configuration lookup: %w", err)
	}
	ws.Add(watch)
	if raw == nil {
		return 0, nil, nil
	}
	cfg := raw.(*autopilotConfigRow).Config
	return cfg.ModifyIndex, cfg, nil
}

// AutopilotSetConfig writes the autopilot configuration. With cas it
// writes only if the stored configuration's ModifyIndex is
// cfg.ModifyIndex (0 when none is stored), and reports whether it wrote.
func (s *StateStore) AutopilotSetConfig(index uint64, cfg *structs.AutopilotConfig, cas bool) (bool, error) {
	txn := s.writeTxn(index)
	defer txn.Abort()
	raw, err := txn.First(TableAutopilotConfig, indexID, schedulerConfigKey)
	if err != nil {
		return false, fmt.Errorf("autopilot configuration lookup: %w", err)
	}
	c := cfg.Copy()
	c.CreateIndex = index
	var stored uint64
	if raw != nil {
		old := raw.(*autopilotConfigRow).Config
		c.CreateIndex, stored = old.CreateIndex, old.ModifyIndex
	}
	if cas && cfg.ModifyIndex != stored {
		return false, nil
	}
	c.ModifyIndex = index
	if err := txn.Insert(TableAutopilotConfig, &autopilotConfigRow{ID: schedulerConfigKey, Config: c}); err != nil {
		return false, err
	}
	return true, txn.commit()
}
