package state

import (
	"fmt"

	"github.com/hashicorp/go-memdb"

	"github.com/nomad-edge/nomad/nomad/structs"
)

// TableOneTimeTokens holds the one-time tokens, by their secret.
const TableOneTimeTokens = "one_time_token"

func oneTimeTokenTableSchema() *memdb.TableSchema {
	return &memdb.TableSchema{
		Name: TableOneTimeTokens,
		Indexes: map[string]*memdb.IndexSchema{
			indexID: {Name: indexID, Unique: true, Indexer: &memdb.StringFieldIndex{Field: "OneTimeSecretID"}},
		},
	}
}

// UpsertOneTimeToken stores a one-time token and deletes, in the same
// transaction, the ones whose secrets expired lists (the leader's
// judgement, carried in the raft entry, so every server deletes the same).
func (s *StateStore) UpsertOneTimeToken(index uint64, ott *structs.OneTimeToken, expired []string) error {
	txn := s.writeTxn(index)
	defer txn.Abort()
	if ott == nil || ott.OneTimeSecretID == "" || ott.AccessorID == "" {
		return fmt.Errorf("upsert one-time token: secret and accessor ID: %w", structs.ErrMissingField)
	}
	if err := deleteOneTimeTokensTxn(txn, expired); err != nil {
		return err
	}
	ott.CreateIndex, ott.ModifyIndex = index, index
	if err := txn.Insert(TableOneTimeTokens, ott); err != nil {
		return err
	}
	return txn.commit()
}

// DeleteOneTimeTokens deletes one-time tokens by secret; a secret already
// gone is no error (an exchange racing an expiry).
func (s *StateStore) DeleteOneTimeTokens(index uint64, secrets []string) error {
	txn := s.writeTxn(index)
	defer txn.Abort()
	if err := deleteOneTimeTokensTxn(txn, secrets); err != nil {
		return err
	}
	return txn.commit()
}

func deleteOneTimeTokensTxn(txn *writeTxn, secrets []string) error {
	for _, secret := range secrets {
		raw, err := txn.First(TableOneTimeTokens, indexID, secret)
		if err != nil {
			return fmt.Errorf("one-time token lookup: %w", err)
		}
		if raw == nil {
			continue
		}
		if err := txn.Delete(TableOneTimeTokens, raw); err != nil {
			return err
		}
	}
	return nil
}

// OneTimeTokenBySecret returns a one-time token, or nil.
func (s *StateStore) OneTimeTokenBySecret(ws memdb.WatchSet, secret string) (*structs.OneTimeToken, error) {
	watchCh, raw, err := s.db.Txn(false).FirstWatch(TableOneTimeTokens, indexID, secret)
	if err != nil {
		return nil, fmt.Errorf("one-time token lookup: %w", err)
	}
	ws.Add(watchCh)
	if raw == nil {
		return nil, nil
	}
	return raw.(*structs.OneTimeToken), nil
}

// OneTimeTokens iterates over every one-time token.
func (s *StateStore) OneTimeTokens(ws memdb.WatchSet) (memdb.ResultIterator, error) {
	return getWatch(s.db.Txn(false), ws, TableOneTimeTokens, indexID)
}
