package state

import (
	"fmt"
	"sort"

	"github.com/hashicorp/go-memdb"

	"github.com/nomad-edge/nomad/nomad/structs"
)

// TableTLSCAs holds the structs.TLSCA of automatic mutual TLS.
const TableTLSCAs = "tls_cas"

func tlsCATableSchema() *memdb.TableSchema {
	return &memdb.TableSchema{
		Name: TableTLSCAs,
		Indexes: map[string]*memdb.IndexSchema{
			indexID: {Name: indexID, Unique: true, Indexer: &memdb.StringFieldIndex{Field: "ID"}},
		},
	}
}

// TLSCAs returns every CA, the active one first, then the retired ones
// newest first. The values returned must not be changed.
func (s *StateStore) TLSCAs(ws memdb.WatchSet) ([]*structs.TLSCA, error) {
	txn := s.db.Txn(false)
	iter, err := txn.Get(TableTLSCAs, indexID)
	if err != nil {
		return nil, fmt.Errorf("tls ca list: %w", err)
	}
	ws.Add(iter.WatchCh())
	var out []*structs.TLSCA
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		out = append(out, raw.(*structs.TLSCA))
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Active != out[j].Active {
			return out[i].Active
		}
		return out[i].CreateIndex > out[j].CreateIndex
	})
	return out, nil
}

// ActiveTLSCA returns the CA that signs, or nil while the cluster has none.
func (s *StateStore) ActiveTLSCA(ws memdb.WatchSet) (*structs.TLSCA, error) {
	cas, err := s.TLSCAs(ws)
	if err != nil || len(cas) == 0 || !cas[0].Active {
		return nil, err
	}
	return cas[0], nil
}

// UpsertTLSCAs writes req's CAs and deletes its Delete list in one
// transaction. It refuses a result with more than one active CA: a new
// active CA must retire the old one in the same entry, so two leaders
// racing to create the first CA leave the one written first.
func (s *StateStore) UpsertTLSCAs(index uint64, req *structs.TLSCAUpsertRequest) error {
	txn := s.writeTxn(index)
	defer txn.Abort()
	for _, ca := range req.CAs {
		if ca == nil || ca.ID == "" || len(ca.CertPEM) == 0 {
			return fmt.Errorf("%w: tls ca without ID or certificate", structs.ErrInvalidRequest)
		}
		c := *ca
		c.ModifyIndex = index
		raw, err := txn.First(TableTLSCAs, indexID, ca.ID)
		if err != nil {
			return fmt.Errorf("tls ca lookup: %w", err)
		}
		if raw != nil {
			c.CreateIndex = raw.(*structs.TLSCA).CreateIndex
		} else {
			c.CreateIndex = index
		}
		if err := txn.Insert(TableTLSCAs, &c); err != nil {
			return err
		}
	}
	for _, id := range req.Delete {
		raw, err := txn.First(TableTLSCAs, indexID, id)
		if err != nil {
			return fmt.Errorf("tls ca lookup: %w", err)
		}
		if raw == nil {
			continue
		}
		if raw.(*structs.TLSCA).Active {
			return fmt.Errorf("%w: tls ca %s is active and cannot be deleted", structs.ErrInvalidRequest, id)
		}
		if err := txn.Delete(TableTLSCAs, raw); err != nil {
			return err
		}
	}
	iter, err := txn.Get(TableTLSCAs, indexID)
	if err != nil {
		return err
	}
	active := 0
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		if raw.(*structs.TLSCA).Active {
			active++
		}
	}
	if active > 1 {
		return fmt.Errorf("%w: %d active tls CAs; a new one must retire the old in the same request", structs.ErrInvalidRequest, active)
	}
	return txn.commit()
}

// tlsCAsUsingKey counts the CAs whose key root key keyID encrypts.
func tlsCAsUsingKey(txn *memdb.Txn, keyID string) (int, error) {
	iter, err := txn.Get(TableTLSCAs, indexID)
	if err != nil {
		return 0, err
	}
	n := 0
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		if raw.(*structs.TLSCA).KeyID == keyID {
			n++
		}
	}
	return n, nil
}
