package state

import (
	"fmt"

	"github.com/hashicorp/go-memdb"

	"github.com/nomad-edge/nomad/nomad/structs"
)

// TableServerIdentity holds the one structs.ServerIdentity.
const TableServerIdentity = "server_identity"

func serverIdentityTableSchema() *memdb.TableSchema {
	return &memdb.TableSchema{
		Name: TableServerIdentity,
		Indexes: map[string]*memdb.IndexSchema{
			indexID: {Name: indexID, Unique: true, Indexer: &memdb.StringFieldIndex{Field: "ID"}},
		},
	}
}

// ServerIdentity returns the servers' shared identity, or nil while none
// has been written. The value returned must not be changed.
func (s *StateStore) ServerIdentity(ws memdb.WatchSet) (*structs.ServerIdentity, error) {
	txn := s.db.Txn(false)
	watch, raw, err := txn.FirstWatch(TableServerIdentity, indexID, structs.ServerIdentityID)
	if err != nil {
		return nil, fmt.Errorf("server identity lookup: %w", err)
	}
	ws.Add(watch)
	if raw == nil {
		return nil, nil
	}
	return raw.(*structs.ServerIdentity), nil
}

// SetServerIdentity writes id unless an identity is stored already, and
// reports whether it wrote: the first secret the servers learn stays
// theirs.
func (s *StateStore) SetServerIdentity(index uint64, id *structs.ServerIdentity) (bool, error) {
	if id == nil || len(id.Secret) == 0 {
		return false, fmt.Errorf("%w: server identity without a secret", structs.ErrInvalidRequest)
	}
	txn := s.writeTxn(index)
	defer txn.Abort()
	raw, err := txn.First(TableServerIdentity, indexID, structs.ServerIdentityID)
	if err != nil {
		return false, fmt.Errorf("server identity lookup: %w", err)
	}
	if raw != nil {
		return false, nil
	}
	c := *id
	c.ID = structs.ServerIdentityID
	c.Secret = append([]byte(nil), id.Secret...)
	c.CreateIndex, c.ModifyIndex = index, index
	if err := txn.Insert(TableServerIdentity, &c); err != nil {
		return false, err
	}
	return true, txn.commit()
}
