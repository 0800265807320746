package state

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-memdb"

	"github.com/nomad-edge/nomad/nomad/structs"
)

// ErrAbandoned is returned by waits that cannot finish because the store was
// replaced by a snapshot restore: nothing will ever be written to it again.
var ErrAbandoned = errors.New("state store abandoned")

// AllNamespaces, passed as the namespace of a prefix lookup, matches objects
// of every namespace (the API's ?namespace=*).
const AllNamespaces = "*"

// StateStoreConfig configures a StateStore.
type StateStoreConfig struct {
	// Logger receives the store's diagnostics. Nil discards them.
	Logger hclog.Logger

	// OnCommit, when set, is called after each write transaction commits,
	// on the writer's goroutine, with the transaction's raft index and the
	// objects it changed (the event stream is built from them). A failed
	// or aborted transaction calls nothing. Snapshots of the store never
	// call it: a scheduler's dry run is not a change anyone should hear of.
	OnCommit func(index uint64, changes memdb.Changes)
}

// StateStore is the server's replicated state: nodes, jobs and their
// summaries, evaluations and allocations, in go-memdb. The raft FSM is its
// only writer on a server; everything else reads, usually through a
// snapshot or a blocking query.
//
// Writes take ownership of the objects they are given: the store sets their
// bookkeeping fields (CreateIndex, ModifyIndex, Status...) in place and keeps
// them, so the FSM sees the indexes it hands on to the eval broker. Callers
// must not change an object after writing it, nor any object read from the
// store: Copy first.
type StateStore struct {
	logger   hclog.Logger
	db       *memdb.MemDB
	onCommit func(uint64, memdb.Changes)

	abandonCh   chan struct{}
	abandonOnce sync.Once
}

// NewStateStore returns an empty store. cfg may be nil.
func NewStateStore(cfg *StateStoreConfig) (*StateStore, error) {
	db, err := memdb.NewMemDB(schema())
	if err != nil {
		return nil, fmt.Errorf("state store schema: %w", err)
	}
	if err := insertDefaultNamespace(db); err != nil {
		return nil, err
	}
	if err := insertBuiltInNodePools(db); err != nil {
		return nil, err
	}
	logger := hclog.NewNullLogger()
	var onCommit func(uint64, memdb.Changes)
	if cfg != nil {
		if cfg.Logger != nil {
			logger = cfg.Logger.Named("state_store")
		}
		onCommit = cfg.OnCommit
	}
	return &StateStore{logger: logger, db: db, onCommit: onCommit, abandonCh: make(chan struct{})}, nil
}

// StateSnapshot is a point-in-time view of the store: later writes to the
// store are invisible to it. It embeds StateStore, so every read works on it,
// and writes to it change only the snapshot (the scheduler's dry runs rely on
// that). Its watch channels never fire.
type StateSnapshot struct {
	StateStore
}

// Snapshot returns a point-in-time view of the store. It is cheap: memdb
// shares the immutable radix trees.
func (s *StateStore) Snapshot() (*StateSnapshot, error) {
	return &StateSnapshot{StateStore: StateStore{
		logger:    s.logger,
		db:        s.db.Snapshot(),
		abandonCh: make(chan struct{}),
	}}, nil
}

// SnapshotMinIndex returns a snapshot once the store has applied index, so a
// scheduler works from state at least as new as its evaluation. It waits on
// the index table's watch channel, not by polling. When ctx ends first it
// returns an error wrapping ctx.Err(); when the store is abandoned, one
// wrapping ErrAbandoned.
func (s *StateStore) SnapshotMinIndex(ctx context.Context, index uint64) (*StateSnapshot, error) {
	for {
		ws := memdb.NewWatchSet()
		ws.Add(s.abandonCh)
		latest, err := latestIndexTxn(s.db.Txn(false), ws)
		if err != nil {
			return nil, err
		}
		if latest >= index {
			return s.Snapshot()
		}
		if err := ws.WatchCtx(ctx); err != nil {
			return nil, fmt.Errorf("waiting for state index %d (latest %d): %w", index, latest, err)
		}
		if s.abandoned() {
			return nil, fmt.Errorf("waiting for state index %d (latest %d): %w", index, latest, ErrAbandoned)
		}
	}
}

// LatestIndex returns the highest index any table was written at.
func (s *StateStore) LatestIndex() (uint64, error) {
	return latestIndexTxn(s.db.Txn(false), nil)
}

func latestIndexTxn(txn *memdb.Txn, ws memdb.WatchSet) (uint64, error) {
	iter, err := txn.Get(TableIndex, indexID)
	if err != nil {
		return 0, fmt.Errorf("index lookup: %w", err)
	}
	ws.Add(iter.WatchCh())
	var latest uint64
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		if e := raw.(*IndexEntry); e.Value > latest {
			latest = e.Value
		}
	}
	return latest, nil
}

// Index returns the index at which table last changed, 0 if never.
func (s *StateStore) Index(table string) (uint64, error) {
	raw, err := s.db.Txn(false).First(TableIndex, indexID, table)
	if err != nil {
		return 0, fmt.Errorf("index lookup: %w", err)
	}
	if raw == nil {
		return 0, nil
	}
	return raw.(*IndexEntry).Value, nil
}

// AbandonCh is closed when the store is abandoned, which the FSM does after
// restoring a snapshot into a fresh store. Blocking queries watch it so they
// do not wait forever on a store that will never change again.
func (s *StateStore) AbandonCh() <-chan struct{} { return s.abandonCh }

// Abandon marks the store as replaced. It is safe to call more than once.
func (s *StateStore) Abandon() { s.abandonOnce.Do(func() { close(s.abandonCh) }) }

func (s *StateStore) abandoned() bool {
	select {
	case <-s.abandonCh:
		return true
	default:
		return false
	}
}

// QueryFn is one run of a blocking query: it reads s (a snapshot), adding
// the watch channels of what it read to ws, and returns its answer with the
// index the answer is current to (usually Index of the tables it read).
type QueryFn func(ws memdb.WatchSet, s *StateStore) (resp any, index uint64, err error)

// BlockingQuery runs fn until its index is greater than minIndex, then
// returns its result. Between runs it sleeps on the watch channels fn
// registered, so it wakes only when something fn read has changed. A
// minIndex of 0 asks for the current answer and never waits.
//
// Each run of fn reads a fresh point-in-time snapshot, so everything it
// reads, the index included, is from one moment. Reading the data and then
// the index from the live store could pair an old answer with a new index,
// and the caller's next query would then sleep through the change it missed.
// The snapshot's watch channels are the live store's, so waking still works.
//
// When ctx ends, or the store is abandoned, BlockingQuery returns the last
// result with a nil error: that is how a blocking query times out in Nomad,
// and the caller answers with whatever index it has. An error from fn is
// returned at once.
func (s *StateStore) BlockingQuery(ctx context.Context, minIndex uint64, fn QueryFn) (any, uint64, error) {
	for {
		ws := memdb.NewWatchSet()
		ws.Add(s.abandonCh)
		snap, err := s.Snapshot()
		if err != nil {
			return nil, 0, err
		}
		resp, index, err := fn(ws, &snap.StateStore)
		if err != nil || minIndex == 0 || index > minIndex {
			return resp, index, err
		}
		if ws.WatchCtx(ctx) != nil || s.abandoned() {
			return resp, index, nil
		}
	}
}

// writeTxn is a memdb write transaction that remembers which tables it
// changed, so that commit can stamp each of them in the index table with the
// transaction's raft index. Routing every Insert and Delete through it makes
// forgetting an index bump impossible.
type writeTxn struct {
	*memdb.Txn
	index    uint64
	touched  map[string]struct{}
	onCommit func(uint64, memdb.Changes)
}

func (s *StateStore) writeTxn(index uint64) *writeTxn {
	txn := &writeTxn{Txn: s.db.Txn(true), index: index, touched: map[string]struct{}{}, onCommit: s.onCommit}
	if txn.onCommit != nil {
		txn.TrackChanges()
	}
	return txn
}

// Insert inserts obj into table and marks the table changed.
func (t *writeTxn) Insert(table string, obj any) error {
	t.touched[table] = struct{}{}
	if err := t.Txn.Insert(table, obj); err != nil {
		return fmt.Errorf("%s insert: %w", table, err)
	}
	return nil
}

// Delete deletes obj from table and marks the table changed.
func (t *writeTxn) Delete(table string, obj any) error {
	t.touched[table] = struct{}{}
	if err := t.Txn.Delete(table, obj); err != nil {
		return fmt.Errorf("%s delete: %w", table, err)
	}
	return nil
}

// commit records the transaction's index for every table it changed and
// commits. The index of a table never moves backwards, so a blocking query
// can never see time run in reverse.
func (t *writeTxn) commit() error {
	for table := range t.touched {
		raw, err := t.Txn.First(TableIndex, indexID, table)
		if err != nil {
			return fmt.Errorf("index lookup: %w", err)
		}
		if raw != nil && raw.(*IndexEntry).Value >= t.index {
			continue
		}
		if err := t.Txn.Insert(TableIndex, &IndexEntry{Key: table, Value: t.index}); err != nil {
			return fmt.Errorf("index update: %w", err)
		}
	}
	var changes memdb.Changes
	if t.onCommit != nil {
		changes = t.Txn.Changes() // only before Commit
	}
	t.Txn.Commit()
	if t.onCommit != nil && len(changes) > 0 {
		t.onCommit(t.index, changes)
	}
	return nil
}

// namespacedIDs is the set of jobs a write touched, whose status must be
// recomputed before the transaction commits.
type namespacedIDs map[structs.NamespacedID]struct{}

func (n namespacedIDs) add(id structs.NamespacedID) {
	if id.ID != "" {
		n[id] = struct{}{}
	}
}

// namespaceMatches reports whether an object in namespace ns belongs to a
// lookup in want (which may be AllNamespaces).
func namespaceMatches(want, ns string) bool { return want == AllNamespaces || want == ns }
