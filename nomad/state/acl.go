package state

import (
	"fmt"

	"github.com/hashicorp/go-memdb"

	"github.com/nomad-edge/nomad/nomad/structs"
)

// indexACLBootstrap is the index table key recording the raft index of
// the ACL bootstrap; it is absent until then. It rides in snapshots with
// the other index entries, so a restored server still refuses a second
// bootstrap.
const indexACLBootstrap = "acl_token_bootstrap"

func aclPolicyTableSchema() *memdb.TableSchema {
	return &memdb.TableSchema{
		Name: TableACLPolicies,
		Indexes: map[string]*memdb.IndexSchema{
			indexID: {Name: indexID, Unique: true, Indexer: &memdb.StringFieldIndex{Field: "Name"}},
		},
	}
}

func aclTokenTableSchema() *memdb.TableSchema {
	return &memdb.TableSchema{
		Name: TableACLTokens,
		Indexes: map[string]*memdb.IndexSchema{
			indexID: {Name: indexID, Unique: true, Indexer: &memdb.StringFieldIndex{Field: "AccessorID"}},
			// Every authenticated request looks its token up by secret.
			indexSecret: {Name: indexSecret, Unique: true, Indexer: &memdb.StringFieldIndex{Field: "SecretID"}},
		},
	}
}

// UpsertACLPolicies creates or updates policies, keeping CreateIndex.
func (s *StateStore) UpsertACLPolicies(index uint64, policies []*structs.ACLPolicy) error {
	txn := s.writeTxn(index)
	defer txn.Abort()
	for _, p := range policies {
		if p == nil || p.Name == "" {
			return fmt.Errorf("upsert ACL policy: name: %w", structs.ErrMissingField)
		}
		raw, err := txn.First(TableACLPolicies, indexID, p.Name)
		if err != nil {
			return fmt.Errorf("ACL policy lookup: %w", err)
		}
		p.CreateIndex = index
		if raw != nil {
			p.CreateIndex = raw.(*structs.ACLPolicy).CreateIndex
		}
		p.ModifyIndex = index
		if err := txn.Insert(TableACLPolicies, p); err != nil {
			return err
		}
	}
	return txn.commit()
}

// DeleteACLPolicies deletes policies by name; it fails, deleting nothing,
// when one does not exist. Tokens naming them keep the names and simply
// get nothing from them.
func (s *StateStore) DeleteACLPolicies(index uint64, names []string) error {
	txn := s.writeTxn(index)
	defer txn.Abort()
	for _, name := range names {
		raw, err := txn.First(TableACLPolicies, indexID, name)
		if err != nil {
			return fmt.Errorf("ACL policy lookup: %w", err)
		}
		if raw == nil {
			return fmt.Errorf("delete ACL policy %q: %w", name, structs.ErrUnknownACLPolicy)
		}
		if err := txn.Delete(TableACLPolicies, raw); err != nil {
			return err
		}
	}
	return txn.commit()
}

// ACLPolicyByName returns a policy, or nil.
func (s *StateStore) ACLPolicyByName(ws memdb.WatchSet, name string) (*structs.ACLPolicy, error) {
	watchCh, raw, err := s.db.Txn(false).FirstWatch(TableACLPolicies, indexID, name)
	if err != nil {
		return nil, fmt.Errorf("ACL policy lookup: %w", err)
	}
	ws.Add(watchCh)
	if raw == nil {
		return nil, nil
	}
	return raw.(*structs.ACLPolicy), nil
}

// ACLPolicies iterates over every policy, by name.
func (s *StateStore) ACLPolicies(ws memdb.WatchSet) (memdb.ResultIterator, error) {
	return getWatch(s.db.Txn(false), ws, TableACLPolicies, indexID)
}

// ACLPoliciesForWorkload returns the policies attached (JobACL) to the
// task of a workload identity, by name. Policies are few: a scan.
func (s *StateStore) ACLPoliciesForWorkload(ws memdb.WatchSet, ns, job, group, task string) ([]*structs.ACLPolicy, error) {
	it, err := s.ACLPolicies(ws)
	if err != nil {
		return nil, err
	}
	var out []*structs.ACLPolicy
	for raw := it.Next(); raw != nil; raw = it.Next() {
		if p := raw.(*structs.ACLPolicy); p.JobACL.Matches(ns, job, group, task) {
			out = append(out, p)
		}
	}
	return out, nil
}

// UpsertACLTokens creates or updates tokens, keeping CreateIndex and the
// secret of an existing token.
func (s *StateStore) UpsertACLTokens(index uint64, tokens []*structs.ACLToken) error {
	txn := s.writeTxn(index)
	defer txn.Abort()
	if err := upsertACLTokensTxn(txn, index, tokens); err != nil {
		return err
	}
	return txn.commit()
}

func upsertACLTokensTxn(txn *writeTxn, index uint64, tokens []*structs.ACLToken) error {
	for _, t := range tokens {
		if t == nil || t.AccessorID == "" {
			return fmt.Errorf("upsert ACL token: accessor ID: %w", structs.ErrMissingField)
		}
		raw, err := txn.First(TableACLTokens, indexID, t.AccessorID)
		if err != nil {
			return fmt.Errorf("ACL token lookup: %w", err)
		}
		t.CreateIndex = index
		if raw != nil {
			old := raw.(*structs.ACLToken)
			t.CreateIndex, t.SecretID, t.CreateTime = old.CreateIndex, old.SecretID, old.CreateTime
		}
		if t.SecretID == "" {
			return fmt.Errorf("upsert ACL token: secret ID: %w", structs.ErrMissingField)
		}
		t.ModifyIndex = index
		if err := txn.Insert(TableACLTokens, t); err != nil {
			return err
		}
	}
	return nil
}

// DeleteACLTokens deletes tokens by accessor ID; it fails, deleting
// nothing, when one does not exist.
func (s *StateStore) DeleteACLTokens(index uint64, accessorIDs []string) error {
	txn := s.writeTxn(index)
	defer txn.Abort()
	for _, id := range accessorIDs {
		raw, err := txn.First(TableACLTokens, indexID, id)
		if err != nil {
			return fmt.Errorf("ACL token lookup: %w", err)
		}
		if raw == nil {
			return fmt.Errorf("delete ACL token %q: %w", id, structs.ErrUnknownACLToken)
		}
		if err := txn.Delete(TableACLTokens, raw); err != nil {
			return err
		}
	}
	return txn.commit()
}

// ACLTokenByAccessorID returns a token, or nil.
func (s *StateStore) ACLTokenByAccessorID(ws memdb.WatchSet, id string) (*structs.ACLToken, error) {
	return aclTokenBy(s.db.Txn(false), ws, indexID, id)
}

// ACLTokenBySecretID returns a token, or nil.
func (s *StateStore) ACLTokenBySecretID(ws memdb.WatchSet, secret string) (*structs.ACLToken, error) {
	return aclTokenBy(s.db.Txn(false), ws, indexSecret, secret)
}

func aclTokenBy(txn *memdb.Txn, ws memdb.WatchSet, index, key string) (*structs.ACLToken, error) {
	watchCh, raw, err := txn.FirstWatch(TableACLTokens, index, key)
	if err != nil {
		return nil, fmt.Errorf("ACL token lookup: %w", err)
	}
	ws.Add(watchCh)
	if raw == nil {
		return nil, nil
	}
	return raw.(*structs.ACLToken), nil
}

// ACLTokens iterates over every token, by accessor ID.
func (s *StateStore) ACLTokens(ws memdb.WatchSet) (memdb.ResultIterator, error) {
	return getWatch(s.db.Txn(false), ws, TableACLTokens, indexID)
}

// BootstrapACLTokens stores the first management token, once: after a
// bootstrap it refuses, naming the index it happened at. The check is
// made here, in the FSM, so two bootstraps racing through raft cannot
// both win.
func (s *StateStore) BootstrapACLTokens(index uint64, token *structs.ACLToken) error {
	txn := s.writeTxn(index)
	defer txn.Abort()
	raw, err := txn.First(TableIndex, indexID, indexACLBootstrap)
	if err != nil {
		return fmt.Errorf("index lookup: %w", err)
	}
	if raw != nil {
		return fmt.Errorf("%w (reset index: %d)", structs.ErrACLBootstrapped, raw.(*IndexEntry).Value)
	}
	if err := upsertACLTokensTxn(txn, index, []*structs.ACLToken{token}); err != nil {
		return err
	}
	if err := txn.Txn.Insert(TableIndex, &IndexEntry{Key: indexACLBootstrap, Value: index}); err != nil {
		return fmt.Errorf("index update: %w", err)
	}
	return txn.commit()
}

// ACLBootstrapIndex returns the raft index of the ACL bootstrap, 0 before.
func (s *StateStore) ACLBootstrapIndex() (uint64, error) {
	return s.Index(indexACLBootstrap)
}
