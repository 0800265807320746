package state

import (
	"fmt"
	"sort"

	"github.com/hashicorp/go-memdb"

	"github.com/nomad-edge/nomad/nomad/structs"
)

// TableSiteOutages holds the declared site outages (see
// docs/concepts/disconnected-clients.md, "Site outages").
const TableSiteOutages = "site_outages"

func siteOutageTableSchema() *memdb.TableSchema {
	return &memdb.TableSchema{
		Name: TableSiteOutages,
		Indexes: map[string]*memdb.IndexSchema{
			indexID: {Name: indexID, Unique: true, Indexer: &memdb.StringFieldIndex{Field: "ID"}},
		},
	}
}

// UpdateSiteOutages declares and clears site outages, appends their node
// events and writes the clears' evaluations, in one transaction: whoever
// sees an outage cleared sees the evaluations that place what it held.
// Declaring an outage already declared
// keeps the first declaration: its time is when the hold began.
func (s *StateStore) UpdateSiteOutages(index uint64, req *structs.SiteOutageUpdateRequest) error {
	txn := s.writeTxn(index)
	defer txn.Abort()
	if err := updateSiteOutagesTxn(txn, index, req); err != nil {
		return err
	}
	return txn.commit()
}

func updateSiteOutagesTxn(txn *writeTxn, index uint64, req *structs.SiteOutageUpdateRequest) error {
	for _, id := range req.Clear {
		raw, err := txn.First(TableSiteOutages, indexID, id)
		if err != nil {
			return fmt.Errorf("site outage lookup: %w", err)
		}
		if raw != nil {
			if err := txn.Delete(TableSiteOutages, raw); err != nil {
				return err
			}
		}
	}
	for _, o := range req.Declare {
		raw, err := txn.First(TableSiteOutages, indexID, o.ID)
		if err != nil {
			return fmt.Errorf("site outage lookup: %w", err)
		}
		if raw != nil {
			continue
		}
		c := *o
		c.CreateIndex, c.ModifyIndex = index, index
		if err := txn.Insert(TableSiteOutages, &c); err != nil {
			return err
		}
	}
	ids := make([]string, 0, len(req.NodeEvents))
	for id := range req.NodeEvents {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		existing, err := nodeByIDTxn(txn.Txn, nil, id)
		if err != nil {
			return err
		}
		if existing == nil {
			continue // deregistered since: nobody to tell
		}
		n := existing.Copy()
		e := req.NodeEvents[id].Copy()
		e.CreateIndex = index
		n.AddEvent(e)
		n.ModifyIndex = index
		if err := txn.Insert(TableNodes, n); err != nil {
			return err
		}
	}
	return upsertEvalsTxn(txn, index, req.Evals)
}

// SiteOutages returns the declared site outages, by ID.
func (s *StateStore) SiteOutages(ws memdb.WatchSet) ([]*structs.SiteOutage, error) {
	iter, err := getWatch(s.db.Txn(false), ws, TableSiteOutages, indexID)
	if err != nil {
		return nil, err
	}
	var out []*structs.SiteOutage
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		out = append(out, raw.(*structs.SiteOutage))
	}
	return out, nil
}
