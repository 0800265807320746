package nomad

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"runtime/debug"

	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	bolt "go.etcd.io/bbolt"
	boltErrors "go.etcd.io/bbolt/errors"
)

// checkRaftStore reads every page of the raft store at path before it is
// opened for writing. bbolt asserts on a garbled page with a panic, and
// the read-write open walks the file in a goroutine of its own, where
// nobody can recover: a corrupt file would crash the agent with a stack
// trace instead of an error naming the file. Walking it first, in a
// goroutine that turns page faults and assertions into errors, catches
// the same damage. A missing or empty file is fine: raft starts afresh.
// The error names the file and says whether it is locked or corrupt.
func checkRaftStore(path string) error {
	if fi, err := os.Stat(path); err != nil || fi.Size() == 0 {
		return nil
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: raftStoreOpenTimeout})
	if err != nil {
		if errors.Is(err, boltErrors.ErrTimeout) {
			return errRaftStoreLocked(path)
		}
		if pe := (*fs.PathError)(nil); errors.As(err, &pe) {
			return fmt.Errorf("opening raft store %s: %w", path, err)
		}
		return errRaftStoreCorrupt(path, err)
	}
	defer db.Close()
	done := make(chan error, 1)
	go func() {
		// The file is memory-mapped: a page number past its end is a
		// fault, which this makes a panic that recover can catch.
		debug.SetPanicOnFault(true)
		defer func() {
			if r := recover(); r != nil {
				done <- fmt.Errorf("%v", r)
			}
		}()
		done <- db.View(func(tx *bolt.Tx) error {
			return tx.ForEach(func(_ []byte, b *bolt.Bucket) error { return walkBucket(b) })
		})
	}()
	if err := <-done; err != nil {
		return errRaftStoreCorrupt(path, err)
	}
	return nil
}

// walkBucket reads every key and value of b and of the buckets within it;
// touching each byte of a value faults on an overflow page past the end.
func walkBucket(b *bolt.Bucket) error {
	var sink byte
	err := b.ForEach(func(k, v []byte) error {
		if v == nil {
			if nested := b.Bucket(k); nested != nil {
				return walkBucket(nested)
			}
		}
		for _, c := range v {
			sink ^= c
		}
		return nil
	})
	_ = sink
	return err
}

// openBoltStore opens the checked raft store. bbolt reports some damage
// only as a panic on the opening goroutine; that one is recoverable.
func openBoltStore(opts raftboltdb.Options) (store *raftboltdb.BoltStore, err error) {
	defer func() {
		if r := recover(); r != nil {
			store, err = nil, fmt.Errorf("%v", r)
		}
	}()
	return raftboltdb.New(opts)
}

func errRaftStoreCorrupt(path string, err error) error {
	return fmt.Errorf("raft store %s is corrupt: %v; restore it from a backup, or move it aside and let this server catch up from the others when it rejoins", path, err)
}

func errRaftStoreLocked(path string) error {
	return fmt.Errorf("raft store %s is locked by another process (is another agent using this data_dir?)", path)
}
