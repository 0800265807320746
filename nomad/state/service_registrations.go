package state

import (
	"fmt"
	"slices"

	"github.com/hashicorp/go-memdb"

	"github.com/nomad-edge/nomad/nomad/structs"
)

// TableServiceRegistrations holds the catalog of services with provider
// "nomad": one row per instance (allocation and service), written by the
// clients, removed with their allocation.
const TableServiceRegistrations = "service_registrations"

const (
	indexServiceName = "service_name"
	indexAllocID     = "alloc_id"
)

func serviceRegistrationTableSchema() *memdb.TableSchema {
	return &memdb.TableSchema{
		Name: TableServiceRegistrations,
		Indexes: map[string]*memdb.IndexSchema{
			indexID: {Name: indexID, Unique: true, Indexer: &memdb.StringFieldIndex{Field: "ID"}},
			// A lookup by name is per namespace; listing a namespace's
			// services scans this index by its first column.
			indexServiceName: {Name: indexServiceName, Indexer: namespacedIndex("ServiceName")},
			// An allocation's instances go when it stops or is collected.
			indexAllocID: {Name: indexAllocID, Indexer: &memdb.StringFieldIndex{Field: "AllocID"}},
			indexJob:     {Name: indexJob, Indexer: namespacedIndex("JobID")},
		},
	}
}

// registrationStatus is what an instance's status is while its allocation
// has client status clientStatus: unknown while the allocation is, active
// otherwise. Terminal allocations have no instances (see
// syncServicesWithAllocTxn).
func registrationStatus(clientStatus string) string {
	if clientStatus == structs.AllocClientStatusUnknown {
		return structs.ServiceRegistrationStatusUnknown
	}
	return structs.ServiceRegistrationStatusActive
}

// UpsertServiceRegistrations writes a client's registrations. Each must
// belong to a live allocation on the writing node, as the endpoint checked
// against the snapshot it read; an allocation that stopped since (or was
// collected) drops its registrations here, inside raft, so the catalog
// never lists an instance of a terminal allocation. A registration equal
// to the stored one writes nothing: a client re-registering after a
// reconnect or a restart causes no churn.
func (s *StateStore) UpsertServiceRegistrations(index uint64, regs []*structs.ServiceRegistration) error {
	txn := s.writeTxn(index)
	defer txn.Abort()
	for _, reg := range regs {
		if err := upsertServiceRegistrationTxn(txn, index, reg); err != nil {
			return err
		}
	}
	return txn.commit()
}

func upsertServiceRegistrationTxn(txn *writeTxn, index uint64, reg *structs.ServiceRegistration) error {
	if reg == nil || reg.ID == "" {
		return fmt.Errorf("upsert service registration: ID: %w", structs.ErrMissingField)
	}
	alloc, err := allocByIDTxn(txn.Txn, nil, reg.AllocID)
	if err != nil {
		return err
	}
	if alloc == nil || alloc.ClientTerminalStatus() || alloc.NodeID != reg.NodeID {
		return nil
	}
	raw, err := txn.First(TableServiceRegistrations, indexID, reg.ID)
	if err != nil {
		return fmt.Errorf("service registration lookup: %w", err)
	}
	next := reg.Copy()
	next.Status = registrationStatus(alloc.ClientStatus)
	next.CreateIndex, next.ModifyIndex = index, index
	if raw != nil {
		existing := raw.(*structs.ServiceRegistration)
		if existing.Equal(next) && existing.Status == next.Status {
			return nil
		}
		next.CreateIndex = existing.CreateIndex
	}
	return txn.Insert(TableServiceRegistrations, next)
}

// DeleteServiceRegistrationByID deletes one registration; a missing one
// is not an error (the client and an operator may both delete it).
func (s *StateStore) DeleteServiceRegistrationByID(index uint64, id string) error {
	txn := s.writeTxn(index)
	defer txn.Abort()
	raw, err := txn.First(TableServiceRegistrations, indexID, id)
	if err != nil {
		return fmt.Errorf("service registration lookup: %w", err)
	}
	if raw != nil {
		if err := txn.Delete(TableServiceRegistrations, raw); err != nil {
			return err
		}
	}
	return txn.commit()
}

// syncServicesWithAllocTxn keeps an allocation's registrations in step
// with its client status, in the transaction that changes it: gone when
// the allocation is terminal (complete, failed, lost), marked unknown while
// it is unknown, active again when its node reports it again. The client
// need not re-register on reconnect, and nothing is written when the
// status the registrations derive from did not change.
func syncServicesWithAllocTxn(txn *writeTxn, index uint64, alloc, existing *structs.Allocation) error {
	if existing != nil && existing.ClientStatus == alloc.ClientStatus {
		return nil
	}
	regs, err := servicesByAllocTxn(txn.Txn, nil, alloc.ID)
	if err != nil || len(regs) == 0 {
		return err
	}
	if alloc.ClientTerminalStatus() {
		for _, r := range regs {
			if err := txn.Delete(TableServiceRegistrations, r); err != nil {
				return err
			}
		}
		return nil
	}
	status := registrationStatus(alloc.ClientStatus)
	for _, r := range regs {
		if r.Status == status {
			continue
		}
		next := r.Copy()
		next.Status = status
		next.ModifyIndex = index
		if err := txn.Insert(TableServiceRegistrations, next); err != nil {
			return err
		}
	}
	return nil
}

// deleteServicesByAllocTxn drops a collected allocation's registrations.
func deleteServicesByAllocTxn(txn *writeTxn, allocID string) error {
	regs, err := servicesByAllocTxn(txn.Txn, nil, allocID)
	if err != nil {
		return err
	}
	for _, r := range regs {
		if err := txn.Delete(TableServiceRegistrations, r); err != nil {
			return err
		}
	}
	return nil
}

func servicesByAllocTxn(txn *memdb.Txn, ws memdb.WatchSet, allocID string) ([]*structs.ServiceRegistration, error) {
	return collectRegistrations(txn, ws, indexAllocID, allocID)
}

func collectRegistrations(txn *memdb.Txn, ws memdb.WatchSet, index string, args ...any) ([]*structs.ServiceRegistration, error) {
	iter, err := txn.Get(TableServiceRegistrations, index, args...)
	if err != nil {
		return nil, fmt.Errorf("service registration lookup: %w", err)
	}
	if ws != nil {
		ws.Add(iter.WatchCh())
	}
	var out []*structs.ServiceRegistration
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		out = append(out, raw.(*structs.ServiceRegistration))
	}
	return out, nil
}

// ServiceRegistrationByID returns one registration, or nil.
func (s *StateStore) ServiceRegistrationByID(ws memdb.WatchSet, id string) (*structs.ServiceRegistration, error) {
	watchCh, raw, err := s.db.Txn(false).FirstWatch(TableServiceRegistrations, indexID, id)
	if err != nil {
		return nil, fmt.Errorf("service registration lookup: %w", err)
	}
	ws.Add(watchCh)
	if raw == nil {
		return nil, nil
	}
	return raw.(*structs.ServiceRegistration), nil
}

// ServiceRegistrationsByName returns the instances of a service in a
// namespace, ordered by ID.
func (s *StateStore) ServiceRegistrationsByName(ws memdb.WatchSet, namespace, name string) ([]*structs.ServiceRegistration, error) {
	return collectRegistrations(s.db.Txn(false), ws, indexServiceName, namespace, name)
}

// ServiceRegistrationsByAlloc returns an allocation's instances.
func (s *StateStore) ServiceRegistrationsByAlloc(ws memdb.WatchSet, allocID string) ([]*structs.ServiceRegistration, error) {
	return servicesByAllocTxn(s.db.Txn(false), ws, allocID)
}

// ServiceRegistrationsByJob returns a job's instances.
func (s *StateStore) ServiceRegistrationsByJob(ws memdb.WatchSet, namespace, jobID string) ([]*structs.ServiceRegistration, error) {
	return collectRegistrations(s.db.Txn(false), ws, indexJob, namespace, jobID)
}

// ServiceRegistrationsByNamespace returns every instance in namespace
// (AllNamespaces for every namespace), ordered by namespace and name.
func (s *StateStore) ServiceRegistrationsByNamespace(ws memdb.WatchSet, namespace string) ([]*structs.ServiceRegistration, error) {
	txn := s.db.Txn(false)
	if namespace == AllNamespaces {
		all, err := collectRegistrations(txn, ws, indexServiceName+prefixSuffix, "")
		return all, err
	}
	return collectRegistrations(txn, ws, indexServiceName+prefixSuffix, namespace, "")
}

// ServiceStubs groups instances into the per-namespace service list of
// GET /v1/services: each service once, with the union of its instances'
// tags, sorted.
func ServiceStubs(regs []*structs.ServiceRegistration) []*structs.ServiceRegistrationListStub {
	out := []*structs.ServiceRegistrationListStub{}
	var ns *structs.ServiceRegistrationListStub
	var svc *structs.ServiceRegistrationStub
	for _, r := range regs {
		if ns == nil || ns.Namespace != r.Namespace {
			ns = &structs.ServiceRegistrationListStub{Namespace: r.Namespace, Services: []*structs.ServiceRegistrationStub{}}
			out = append(out, ns)
			svc = nil
		}
		if svc == nil || svc.ServiceName != r.ServiceName {
			svc = &structs.ServiceRegistrationStub{ServiceName: r.ServiceName, Tags: []string{}}
			ns.Services = append(ns.Services, svc)
		}
		for _, t := range r.Tags {
			if !slices.Contains(svc.Tags, t) {
				svc.Tags = append(svc.Tags, t)
			}
		}
	}
	for _, n := range out {
		for _, s := range n.Services {
			slices.Sort(s.Tags)
		}
	}
	return out
}
