package state

import (
	"fmt"
	"maps"
	"slices"

	"github.com/hashicorp/go-memdb"

	"github.com/nomad-edge/nomad/nomad/structs"
)

// TableScalingEvent holds each job's recent scaling events, which the
// scale status shows and autoscalers read to honour their cooldowns.
const TableScalingEvent = "scaling_event"

func scalingEventTableSchema() *memdb.TableSchema {
	return &memdb.TableSchema{
		Name: TableScalingEvent,
		Indexes: map[string]*memdb.IndexSchema{
			indexID: {Name: indexID, Unique: true, Indexer: namespacedIndex("JobID")},
		},
	}
}

// UpsertScalingEvent records a scaling event, newest first, keeping the
// newest structs.JobTrackedScalingEvents of the group. The event's
// CreateIndex is set to index.
func (s *StateStore) UpsertScalingEvent(index uint64, req *structs.ScalingEventRequest) error {
	txn := s.writeTxn(index)
	defer txn.Abort()
	if err := upsertScalingEventTxn(txn, index, req); err != nil {
		return err
	}
	return txn.commit()
}

func upsertScalingEventTxn(txn *writeTxn, index uint64, req *structs.ScalingEventRequest) error {
	if req == nil || req.ScalingEvent == nil || req.JobID == "" || req.TaskGroup == "" {
		return fmt.Errorf("upsert scaling event: job, group and event: %w", structs.ErrMissingField)
	}
	raw, err := txn.First(TableScalingEvent, indexID, req.Namespace, req.JobID)
	if err != nil {
		return fmt.Errorf("scaling event lookup: %w", err)
	}
	next := &structs.JobScalingEvents{Namespace: req.Namespace, JobID: req.JobID, ScalingEvents: map[string][]*structs.ScalingEvent{}}
	if raw != nil {
		next.ScalingEvents = maps.Clone(raw.(*structs.JobScalingEvents).ScalingEvents)
	}
	ev := *req.ScalingEvent
	ev.CreateIndex = index
	events := append([]*structs.ScalingEvent{&ev}, next.ScalingEvents[req.TaskGroup]...)
	next.ScalingEvents[req.TaskGroup] = slices.Clip(events[:min(len(events), structs.JobTrackedScalingEvents)])
	next.ModifyIndex = index
	return txn.Insert(TableScalingEvent, next)
}

// deleteScalingEventsTxn drops a purged job's scaling history.
func deleteScalingEventsTxn(txn *writeTxn, namespace, jobID string) error {
	raw, err := txn.First(TableScalingEvent, indexID, namespace, jobID)
	if err != nil {
		return fmt.Errorf("scaling event lookup: %w", err)
	}
	if raw == nil {
		return nil
	}
	return txn.Delete(TableScalingEvent, raw)
}

// ScalingEventsByJob returns a job's scaling events, or nil when it has
// none.
func (s *StateStore) ScalingEventsByJob(ws memdb.WatchSet, namespace, jobID string) (*structs.JobScalingEvents, error) {
	watchCh, raw, err := s.db.Txn(false).FirstWatch(TableScalingEvent, indexID, namespace, jobID)
	if err != nil {
		return nil, fmt.Errorf("scaling event lookup: %w", err)
	}
	ws.Add(watchCh)
	if raw == nil {
		return nil, nil
	}
	return raw.(*structs.JobScalingEvents), nil
}
