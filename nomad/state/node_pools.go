package state

import (
	"fmt"
	"sort"
	"strings"

	"github.com/hashicorp/go-memdb"

	"github.com/nomad-edge/nomad/nomad/structs"
)

// TableNodePools holds the node pools, built-in ones included.
const TableNodePools = "node_pools"

func nodePoolTableSchema() *memdb.TableSchema {
	return &memdb.TableSchema{
		Name: TableNodePools,
		Indexes: map[string]*memdb.IndexSchema{
			indexID: {Name: indexID, Unique: true, Indexer: &memdb.StringFieldIndex{Field: "Name"}},
		},
	}
}

// insertBuiltInNodePools puts "all" and "default" in a new store at index
// 1, as insertDefaultNamespace does: an older snapshot without pools keeps
// them, a newer one brings its own copies.
func insertBuiltInNodePools(db *memdb.MemDB) error {
	txn := db.Txn(true)
	defer txn.Abort()
	for _, p := range structs.BuiltInNodePools() {
		p.CreateIndex, p.ModifyIndex = 1, 1
		if err := txn.Insert(TableNodePools, p); err != nil {
			return fmt.Errorf("built-in node pool %q: %w", p.Name, err)
		}
	}
	txn.Commit()
	return nil
}

// UpsertNodePools creates or updates pools, keeping CreateIndex. Built-in
// pools are refused: they are the same in every cluster.
func (s *StateStore) UpsertNodePools(index uint64, pools []*structs.NodePool) error {
	txn := s.writeTxn(index)
	defer txn.Abort()
	for _, p := range pools {
		if p == nil || p.Name == "" {
			return fmt.Errorf("upsert node pool: name: %w", structs.ErrMissingField)
		}
		if p.IsBuiltIn() {
			return fmt.Errorf("%w: modifying node pool %q is not allowed", structs.ErrInvalidRequest, p.Name)
		}
		if err := upsertNodePoolTxn(txn, index, p); err != nil {
			return err
		}
	}
	return txn.commit()
}

func upsertNodePoolTxn(txn *writeTxn, index uint64, p *structs.NodePool) error {
	raw, err := txn.First(TableNodePools, indexID, p.Name)
	if err != nil {
		return fmt.Errorf("node pool lookup: %w", err)
	}
	p.CreateIndex = index
	if raw != nil {
		p.CreateIndex = raw.(*structs.NodePool).CreateIndex
	}
	p.ModifyIndex = index
	return txn.Insert(TableNodePools, p)
}

// ensureNodePoolTxn creates the pool a registering node names when it does
// not exist yet, as upstream does: a client's config is enough to start a
// pool, and an operator describes it later.
func ensureNodePoolTxn(txn *writeTxn, index uint64, name string) error {
	if name == "" {
		return nil
	}
	raw, err := txn.First(TableNodePools, indexID, name)
	if err != nil {
		return fmt.Errorf("node pool lookup: %w", err)
	}
	if raw != nil {
		return nil
	}
	return upsertNodePoolTxn(txn, index, &structs.NodePool{Name: name, Meta: map[string]string{}})
}

// DeleteNodePools deletes pools by name, all or none. It refuses built-in
// pools, unknown names, and a pool that still has nodes or jobs that are
// not dead, naming them. The check runs in the FSM so a node or job that
// joins while the delete goes through raft is not orphaned.
func (s *StateStore) DeleteNodePools(index uint64, names []string) error {
	txn := s.writeTxn(index)
	defer txn.Abort()
	for _, name := range names {
		if name == structs.NodePoolAll || name == structs.DefaultNodePool {
			return fmt.Errorf("%w: deleting node pool %q is not allowed: it is built in", structs.ErrInvalidRequest, name)
		}
		raw, err := txn.First(TableNodePools, indexID, name)
		if err != nil {
			return fmt.Errorf("node pool lookup: %w", err)
		}
		if raw == nil {
			return fmt.Errorf("%w: %q", structs.ErrUnknownNodePool, name)
		}
		var inUse []string
		nodes, err := nodesInPoolTxn(txn.Txn, nil, name)
		if err != nil {
			return err
		}
		if len(nodes) > 0 {
			inUse = append(inUse, "nodes: "+strings.Join(nodeIDs(nodes), ", "))
		}
		jobs, err := jobsInPoolTxn(txn.Txn, nil, name)
		if err != nil {
			return err
		}
		var live []string
		for _, j := range jobs {
			if j.Status != structs.JobStatusDead {
				live = append(live, j.Namespace+"/"+j.ID)
			}
		}
		if len(live) > 0 {
			inUse = append(inUse, "non-terminal jobs: "+strings.Join(live, ", "))
		}
		if len(inUse) > 0 {
			return fmt.Errorf("%w: node pool %q is in use by %s", structs.ErrInvalidRequest, name, strings.Join(inUse, "; "))
		}
		if err := txn.Delete(TableNodePools, raw); err != nil {
			return err
		}
	}
	return txn.commit()
}

func nodeIDs(nodes []*structs.Node) []string {
	out := make([]string, len(nodes))
	for i, n := range nodes {
		out[i] = n.ID
	}
	return out
}

// NodePoolByName returns a pool, or nil.
func (s *StateStore) NodePoolByName(ws memdb.WatchSet, name string) (*structs.NodePool, error) {
	watchCh, raw, err := s.db.Txn(false).FirstWatch(TableNodePools, indexID, name)
	if err != nil {
		return nil, fmt.Errorf("node pool lookup: %w", err)
	}
	ws.Add(watchCh)
	if raw == nil {
		return nil, nil
	}
	return raw.(*structs.NodePool), nil
}

// NodePoolsByNamePrefix iterates over the pools whose names start with
// prefix, by name.
func (s *StateStore) NodePoolsByNamePrefix(ws memdb.WatchSet, prefix string) (memdb.ResultIterator, error) {
	return getWatch(s.db.Txn(false), ws, TableNodePools, indexID+prefixSuffix, prefix)
}

// NodesByNodePool returns the nodes in pool, by ID; "all" is every node.
// Nodes are few enough (thousands) that a scan beats a second index that
// every node write would maintain.
func (s *StateStore) NodesByNodePool(ws memdb.WatchSet, pool string) ([]*structs.Node, error) {
	return nodesInPoolTxn(s.db.Txn(false), ws, pool)
}

func nodesInPoolTxn(txn *memdb.Txn, ws memdb.WatchSet, pool string) ([]*structs.Node, error) {
	iter, err := getWatch(txn, ws, TableNodes, indexID)
	if err != nil {
		return nil, err
	}
	var out []*structs.Node
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		n := raw.(*structs.Node)
		if pool == structs.NodePoolAll || nodePoolOf(n.NodePool) == pool {
			out = append(out, n)
		}
	}
	return out, nil
}

// JobsByNodePool returns the jobs of every namespace that ask for pool, by
// namespace then ID.
func (s *StateStore) JobsByNodePool(ws memdb.WatchSet, pool string) ([]*structs.Job, error) {
	return jobsInPoolTxn(s.db.Txn(false), ws, pool)
}

func jobsInPoolTxn(txn *memdb.Txn, ws memdb.WatchSet, pool string) ([]*structs.Job, error) {
	iter, err := getWatch(txn, ws, TableJobs, indexID)
	if err != nil {
		return nil, err
	}
	var out []*structs.Job
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		if j := raw.(*structs.Job); nodePoolOf(j.NodePool) == pool {
			out = append(out, j)
		}
	}
	sort.SliceStable(out, func(a, b int) bool {
		if out[a].Namespace != out[b].Namespace {
			return out[a].Namespace < out[b].Namespace
		}
		return out[a].ID < out[b].ID
	})
	return out, nil
}

func nodePoolOf(name string) string {
	if name == "" {
		return structs.DefaultNodePool
	}
	return name
}
