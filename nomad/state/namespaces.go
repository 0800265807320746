package state

import (
	"fmt"
	"sort"
	"strings"

	"github.com/hashicorp/go-memdb"

	"github.com/nomad-edge/nomad/nomad/structs"
)

func namespaceTableSchema() *memdb.TableSchema {
	return &memdb.TableSchema{
		Name: TableNamespaces,
		Indexes: map[string]*memdb.IndexSchema{
			indexID: {Name: indexID, Unique: true, Indexer: &memdb.StringFieldIndex{Field: "Name"}},
		},
	}
}

// insertDefaultNamespace puts the default namespace in a new store, at
// index 1 as upstream. It does not stamp the index table: an empty store
// stays at index 0, and a snapshot restored over it brings its own copy
// (an older snapshot without namespaces keeps this one).
func insertDefaultNamespace(db *memdb.MemDB) error {
	ns := structs.DefaultNamespaceObject()
	ns.CreateIndex, ns.ModifyIndex = 1, 1
	txn := db.Txn(true)
	defer txn.Abort()
	if err := txn.Insert(TableNamespaces, ns); err != nil {
		return fmt.Errorf("default namespace: %w", err)
	}
	txn.Commit()
	return nil
}

// UpsertNamespaces creates or updates namespaces, keeping CreateIndex.
func (s *StateStore) UpsertNamespaces(index uint64, namespaces []*structs.Namespace) error {
	txn := s.writeTxn(index)
	defer txn.Abort()
	for _, ns := range namespaces {
		if ns == nil || ns.Name == "" {
			return fmt.Errorf("upsert namespace: name: %w", structs.ErrMissingField)
		}
		raw, err := txn.First(TableNamespaces, indexID, ns.Name)
		if err != nil {
			return fmt.Errorf("namespace lookup: %w", err)
		}
		ns.CreateIndex = index
		if raw != nil {
			ns.CreateIndex = raw.(*structs.Namespace).CreateIndex
		}
		ns.ModifyIndex = index
		if err := txn.Insert(TableNamespaces, ns); err != nil {
			return err
		}
	}
	return txn.commit()
}

// DeleteNamespaces deletes namespaces by name, all or none. It refuses the
// default namespace, a name that does not exist, and a namespace that
// still holds jobs that are not dead, naming them. The check is made here,
// in the FSM, so a job registered while the delete went through raft is
// not orphaned.
func (s *StateStore) DeleteNamespaces(index uint64, names []string) error {
	txn := s.writeTxn(index)
	defer txn.Abort()
	for _, name := range names {
		if name == structs.DefaultNamespace {
			return fmt.Errorf("%w: the default namespace cannot be deleted", structs.ErrInvalidRequest)
		}
		raw, err := txn.First(TableNamespaces, indexID, name)
		if err != nil {
			return fmt.Errorf("namespace lookup: %w", err)
		}
		if raw == nil {
			return fmt.Errorf("%w: %q", structs.ErrUnknownNamespace, name)
		}
		live, err := liveJobsTxn(txn.Txn, name)
		if err != nil {
			return err
		}
		if len(live) > 0 {
			return fmt.Errorf("%w: namespace %q has non-terminal jobs: %s; stop them first",
				structs.ErrInvalidRequest, name, strings.Join(live, ", "))
		}
		if err := txn.Delete(TableNamespaces, raw); err != nil {
			return err
		}
	}
	return txn.commit()
}

// liveJobsTxn returns the IDs of the jobs of namespace ns that are not
// dead, sorted.
func liveJobsTxn(txn *memdb.Txn, ns string) ([]string, error) {
	iter, err := txn.Get(TableJobs, indexID+prefixSuffix, ns, "")
	if err != nil {
		return nil, fmt.Errorf("job lookup: %w", err)
	}
	var live []string
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		if j := raw.(*structs.Job); j.Status != structs.JobStatusDead {
			live = append(live, j.ID)
		}
	}
	sort.Strings(live)
	return live, nil
}

// NamespaceByName returns a namespace, or nil.
func (s *StateStore) NamespaceByName(ws memdb.WatchSet, name string) (*structs.Namespace, error) {
	watchCh, raw, err := s.db.Txn(false).FirstWatch(TableNamespaces, indexID, name)
	if err != nil {
		return nil, fmt.Errorf("namespace lookup: %w", err)
	}
	ws.Add(watchCh)
	if raw == nil {
		return nil, nil
	}
	return raw.(*structs.Namespace), nil
}

// NamespacesByNamePrefix iterates over the namespaces whose names start
// with prefix, by name.
func (s *StateStore) NamespacesByNamePrefix(ws memdb.WatchSet, prefix string) (memdb.ResultIterator, error) {
	return getWatch(s.db.Txn(false), ws, TableNamespaces, indexID+prefixSuffix, prefix)
}

// NamespaceExists returns nil when namespace ns exists, and otherwise the
// refusal to give a request naming it.
func (s *StateStore) NamespaceExists(ns string) error {
	n, err := s.NamespaceByName(nil, ns)
	if err != nil {
		return err
	}
	if n == nil {
		return structs.NamespaceMissingError(ns)
	}
	return nil
}
