package state

import (
	"fmt"

	"github.com/hashicorp/go-memdb"

	"github.com/nomad-edge/nomad/nomad/structs"
)

// TableSchedulerConfig holds the one scheduler configuration, once written
// (GET/PUT /v1/operator/scheduler/configuration).
const TableSchedulerConfig = "scheduler_config"

// schedulerConfigKey is the id of the table's one row.
const schedulerConfigKey = "config"

// schedulerConfigRow is the stored row: memdb needs an id field, the
// configuration has none.
type schedulerConfigRow struct {
	ID     string
	Config *structs.SchedulerConfiguration
}

func schedulerConfigTableSchema() *memdb.TableSchema {
	return &memdb.TableSchema{
		Name: TableSchedulerConfig,
		Indexes: map[string]*memdb.IndexSchema{
			indexID: {Name: indexID, Unique: true, Indexer: &memdb.StringFieldIndex{Field: "ID"}},
		},
	}
}

// SchedulerConfig returns the stored scheduler configuration and the
// index at which it was written, or the default at index 0 when none has
// been written. The configuration returned must not be changed.
func (s *StateStore) SchedulerConfig(ws memdb.WatchSet) (uint64, *structs.SchedulerConfiguration, error) {
	txn := s.db.Txn(false)
	return schedulerConfigTxn(txn, ws)
}

func schedulerConfigTxn(txn *memdb.Txn, ws memdb.WatchSet) (uint64, *structs.SchedulerConfiguration, error) {
	watch, raw, err := txn.FirstWatch(TableSchedulerConfig, indexID, schedulerConfigKey)
	if err != nil {
		return 0, nil, fmt.Errorf("scheduler configuration lookup: %w", err)
	}
	ws.Add(watch)
	if raw == nil {
		return 0, structs.DefaultSchedulerConfiguration(), nil
	}
	cfg := raw.(*schedulerConfigRow).Config
	return cfg.ModifyIndex, cfg, nil
}

// SchedulerSetConfig writes the scheduler configuration. With cas it
// writes only if the stored configuration's ModifyIndex is
// cfg.ModifyIndex (0 when none is stored), and reports whether it wrote.
func (s *StateStore) SchedulerSetConfig(index uint64, cfg *structs.SchedulerConfiguration, cas bool) (bool, error) {
	txn := s.writeTxn(index)
	defer txn.Abort()
	raw, err := txn.First(TableSchedulerConfig, indexID, schedulerConfigKey)
	if err != nil {
		return false, fmt.Errorf("scheduler configuration lookup: %w", err)
	}
	c := cfg.Copy()
	c.CreateIndex = index
	var stored uint64
	if raw != nil {
		old := raw.(*schedulerConfigRow).Config
		c.CreateIndex, stored = old.CreateIndex, old.ModifyIndex
	}
	if cas && cfg.ModifyIndex != stored {
		return false, nil
	}
	c.ModifyIndex = index
	if err := txn.Insert(TableSchedulerConfig, &schedulerConfigRow{ID: schedulerConfigKey, Config: c}); err != nil {
		return false, err
	}
	return true, txn.commit()
}

// evalBrokerPausedTxn reports whether the stored configuration pauses the
// eval broker.
func evalBrokerPausedTxn(txn *memdb.Txn) (bool, error) {
	_, cfg, err := schedulerConfigTxn(txn, nil)
	if err != nil {
		return false, err
	}
	return cfg.PauseEvalBroker, nil
}

// SchedulerConfigSnapshotObject is c as a snapshot record of kind
// SnapshotSchedulerConfig holds it, for a writer of the persist stream
// other than Persist (a translated upstream snapshot).
func SchedulerConfigSnapshotObject(c *structs.SchedulerConfiguration) any {
	return &schedulerConfigRow{ID: schedulerConfigKey, Config: c}
}
