package state

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/hashicorp/go-memdb"

	"github.com/nomad-edge/nomad/nomad/structs"
)

// TableDeployment holds deployments, keyed by ID, with a job index so the
// scheduler and the watcher find a job's latest one.
const TableDeployment = "deployment"

func deploymentTableSchema() *memdb.TableSchema {
	return &memdb.TableSchema{
		Name: TableDeployment,
		Indexes: map[string]*memdb.IndexSchema{
			indexID: {Name: indexID, Unique: true, Indexer: &memdb.StringFieldIndex{Field: "ID"}},
			indexJob: {Name: indexJob, Indexer: &memdb.CompoundIndex{Indexes: []memdb.Indexer{
				&memdb.StringFieldIndex{Field: "Namespace"},
				&memdb.StringFieldIndex{Field: "JobID"},
			}}},
			// The deployment watcher reads only what changed since its
			// last pass (DeploymentsModifiedSince).
			indexModify: {Name: indexModify, Indexer: &memdb.UintFieldIndex{Field: "ModifyIndex"}},
		},
	}
}

// UpsertDeployment writes a deployment, keeping CreateIndex of an existing
// one.
func (s *StateStore) UpsertDeployment(index uint64, d *structs.Deployment) error {
	txn := s.writeTxn(index)
	defer txn.Abort()
	if err := upsertDeploymentTxn(txn, index, d); err != nil {
		return err
	}
	return txn.commit()
}

func upsertDeploymentTxn(txn *writeTxn, index uint64, d *structs.Deployment) error {
	if d == nil || d.ID == "" {
		return fmt.Errorf("upsert deployment: deployment ID: %w", structs.ErrMissingField)
	}
	existing, err := deploymentByIDTxn(txn.Txn, nil, d.ID)
	if err != nil {
		return err
	}
	if existing != nil {
		d.CreateIndex = existing.CreateIndex
	} else {
		d.CreateIndex = index
	}
	d.ModifyIndex = index
	return txn.Insert(TableDeployment, d)
}

// DeploymentByID returns the deployment, or nil.
func (s *StateStore) DeploymentByID(ws memdb.WatchSet, id string) (*structs.Deployment, error) {
	return deploymentByIDTxn(s.db.Txn(false), ws, id)
}

func deploymentByIDTxn(txn *memdb.Txn, ws memdb.WatchSet, id string) (*structs.Deployment, error) {
	watchCh, raw, err := txn.FirstWatch(TableDeployment, indexID, id)
	if err != nil {
		return nil, fmt.Errorf("deployment lookup: %w", err)
	}
	ws.Add(watchCh)
	if raw == nil {
		return nil, nil
	}
	return raw.(*structs.Deployment), nil
}

// Deployments returns the deployments of namespace (or AllNamespaces) whose
// ID starts with prefix, newest first.
func (s *StateStore) Deployments(ws memdb.WatchSet, namespace, prefix string) ([]*structs.Deployment, error) {
	iter, err := s.db.Txn(false).Get(TableDeployment, indexID+prefixSuffix, prefix)
	if err != nil {
		return nil, fmt.Errorf("deployment lookup: %w", err)
	}
	ws.Add(iter.WatchCh())
	var out []*structs.Deployment
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		if d := raw.(*structs.Deployment); namespaceMatches(namespace, d.Namespace) {
			out = append(out, d)
		}
	}
	sortNewestFirst(out)
	return out, nil
}

// indexModify orders deployments by the raft index that last wrote them.
const indexModify = "modify_index"

// DeploymentsModifiedSince returns the deployments last written at index
// or later, in the order they were written; ws wakes on any deployment
// write. A reader that remembers the highest ModifyIndex it saw and asks
// for the next one sees every write exactly once, since the FSM writes in
// index order and a read sees whole transactions.
func (s *StateStore) DeploymentsModifiedSince(ws memdb.WatchSet, index uint64) ([]*structs.Deployment, error) {
	txn := s.db.Txn(false)
	// LowerBound's iterator cannot be watched: watch the table instead.
	all, err := txn.Get(TableDeployment, indexID+prefixSuffix, "")
	if err != nil {
		return nil, fmt.Errorf("deployment lookup: %w", err)
	}
	ws.Add(all.WatchCh())
	iter, err := txn.LowerBound(TableDeployment, indexModify, index)
	if err != nil {
		return nil, fmt.Errorf("deployment lookup: %w", err)
	}
	var out []*structs.Deployment
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		out = append(out, raw.(*structs.Deployment))
	}
	return out, nil
}

// DeploymentsByJobID returns a job's deployments, newest first.
func (s *StateStore) DeploymentsByJobID(ws memdb.WatchSet, namespace, jobID string) ([]*structs.Deployment, error) {
	return deploymentsByJobTxn(s.db.Txn(false), ws, namespace, jobID)
}

func deploymentsByJobTxn(txn *memdb.Txn, ws memdb.WatchSet, namespace, jobID string) ([]*structs.Deployment, error) {
	iter, err := txn.Get(TableDeployment, indexJob, namespace, jobID)
	if err != nil {
		return nil, fmt.Errorf("deployment lookup: %w", err)
	}
	ws.Add(iter.WatchCh())
	var out []*structs.Deployment
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		out = append(out, raw.(*structs.Deployment))
	}
	sortNewestFirst(out)
	return out, nil
}

// LatestDeploymentByJobID returns a job's newest deployment, or nil.
func (s *StateStore) LatestDeploymentByJobID(ws memdb.WatchSet, namespace, jobID string) (*structs.Deployment, error) {
	all, err := s.DeploymentsByJobID(ws, namespace, jobID)
	if err != nil || len(all) == 0 {
		return nil, err
	}
	return all[0], nil
}

func sortNewestFirst(ds []*structs.Deployment) {
	sort.Slice(ds, func(a, b int) bool {
		if ds[a].CreateIndex != ds[b].CreateIndex {
			return ds[a].CreateIndex > ds[b].CreateIndex
		}
		return strings.Compare(ds[a].ID, ds[b].ID) < 0
	})
}

// UpdateDeploymentStatus applies a deployment verdict in one transaction:
// the status, the rollback job when there is one, the stable mark of the
// deployed version on success, and the evaluation that follows.
func (s *StateStore) UpdateDeploymentStatus(index uint64, req *structs.DeploymentStatusUpdateRequest) error {
	txn := s.writeTxn(index)
	defer txn.Abort()
	d, err := deploymentByIDTxn(txn.Txn, nil, req.DeploymentUpdate.DeploymentID)
	if err != nil {
		return err
	}
	if d == nil {
		return fmt.Errorf("deployment %s: %w", req.DeploymentUpdate.DeploymentID, structs.ErrUnknownDeployment)
	}
	if err := setDeploymentStatusTxn(txn, index, req.DeploymentUpdate, req.UpdatedAt); err != nil {
		return err
	}
	if req.StableVersion != nil {
		if err := updateJobStabilityTxn(txn, index, d.Namespace, d.JobID, *req.StableVersion, true); err != nil {
			return err
		}
	}
	if req.Job != nil {
		if err := upsertJobTxn(txn, index, req.UpdatedAt, req.Job); err != nil {
			return err
		}
	}
	if req.Eval != nil {
		if req.Job != nil {
			req.Eval.JobModifyIndex = index
		}
		if err := upsertEvalsTxn(txn, index, []*structs.Evaluation{req.Eval}); err != nil {
			return err
		}
	}
	return txn.commit()
}

// setDeploymentStatusTxn changes a deployment's status; a terminal one
// stays terminal (a late verdict cannot revive a finished deployment).
func setDeploymentStatusTxn(txn *writeTxn, index uint64, u *structs.DeploymentStatusUpdate, updatedAt int64) error {
	if u == nil {
		return nil
	}
	d, err := deploymentByIDTxn(txn.Txn, nil, u.DeploymentID)
	if err != nil || d == nil {
		return err
	}
	if !d.Active() {
		return nil
	}
	c := d.Copy()
	if d.Status == structs.DeploymentStatusPaused && u.Status == structs.DeploymentStatusRunning && updatedAt != 0 {
		// A pause stops the clock: a resumed deployment gets its whole
		// progress deadline again rather than failing at once.
		for _, g := range c.TaskGroups {
			if g.ProgressDeadline > 0 && g.HealthyAllocs < g.DesiredTotal {
				g.RequireProgressBy = time.Unix(0, updatedAt).UTC().Add(g.ProgressDeadline)
			}
		}
	}
	c.Status, c.StatusDescription = u.Status, u.StatusDescription
	if updatedAt != 0 {
		c.ModifyTime = updatedAt
	}
	return upsertDeploymentTxn(txn, index, c)
}

// UpdateDeploymentPromotion promotes the canaries of the named groups (all
// with All) and writes the evaluation that continues the rollout.
func (s *StateStore) UpdateDeploymentPromotion(index uint64, req *structs.ApplyDeploymentPromoteRequest) error {
	txn := s.writeTxn(index)
	defer txn.Abort()
	d, err := deploymentByIDTxn(txn.Txn, nil, req.DeploymentID)
	if err != nil {
		return err
	}
	if d == nil {
		return fmt.Errorf("deployment %s: %w", req.DeploymentID, structs.ErrUnknownDeployment)
	}
	c := d.Copy()
	for name, g := range c.TaskGroups {
		if g.DesiredCanaries == 0 || (!req.All && !contains(req.Groups, name)) {
			continue
		}
		if !g.Promoted {
			if err := promoteCanariesTxn(txn, index, g.PlacedCanaries); err != nil {
				return err
			}
		}
		g.Promoted = true
	}
	if c.Status == structs.DeploymentStatusRunning {
		c.StatusDescription = structs.DeploymentStatusDescriptionRunning
	}
	if req.UpdatedAt != 0 {
		c.ModifyTime = req.UpdatedAt
	}
	if err := upsertDeploymentTxn(txn, index, c); err != nil {
		return err
	}
	if req.Eval != nil {
		if err := upsertEvalsTxn(txn, index, []*structs.Evaluation{req.Eval}); err != nil {
			return err
		}
	}
	return txn.commit()
}

// promoteCanariesTxn clears the canary flag of a promoted group's
// canaries, as upstream: their clients see the change (AllocModifyIndex)
// and register the services' tags in place of canary_tags. The scheduler
// still knows them as canaries by the group's PlacedCanaries.
func promoteCanariesTxn(txn *writeTxn, index uint64, ids []string) error {
	for _, id := range ids {
		existing, err := allocByIDTxn(txn.Txn, nil, id)
		if err != nil {
			return err
		}
		if existing == nil || !existing.DeploymentStatus.IsCanary() {
			continue
		}
		a := existing.Copy()
		a.DeploymentStatus.Canary = false
		a.DeploymentStatus.ModifyIndex = index
		a.ModifyIndex, a.AllocModifyIndex = index, index
		if err := storeAllocTxn(txn, index, a, existing); err != nil {
			return err
		}
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// UpdateDeploymentAllocHealth records health reported by hand. Only
// DeploymentStatus changes on the allocations: a health report carries no
// client status, so it can never overwrite an unknown the scheduler set.
func (s *StateStore) UpdateDeploymentAllocHealth(index uint64, req *structs.ApplyDeploymentAllocHealthRequest) error {
	txn := s.writeTxn(index)
	defer txn.Abort()
	set := func(ids []string, healthy bool) error {
		for _, id := range ids {
			existing, err := allocByIDTxn(txn.Txn, nil, id)
			if err != nil {
				return err
			}
			if existing == nil || existing.DeploymentID != req.DeploymentID {
				return fmt.Errorf("allocation %s is not part of deployment %s: %w", id, req.DeploymentID, structs.ErrInvalidRequest)
			}
			a := existing.Copy()
			if a.DeploymentStatus == nil {
				a.DeploymentStatus = &structs.AllocDeploymentStatus{}
			}
			a.DeploymentStatus.Healthy = new(healthy)
			a.DeploymentStatus.Timestamp = req.Timestamp
			a.DeploymentStatus.ModifyIndex = index
			a.ModifyIndex = index
			if err := countDeploymentHealthTxn(txn, index, existing, a); err != nil {
				return err
			}
			if err := txn.Insert(TableAllocs, a); err != nil {
				return err
			}
		}
		return nil
	}
	if err := set(req.HealthyAllocationIDs, true); err != nil {
		return err
	}
	if err := set(req.UnhealthyAllocationIDs, false); err != nil {
		return err
	}
	if err := setDeploymentStatusTxn(txn, index, req.DeploymentUpdate, req.Timestamp.UnixNano()); err != nil {
		return err
	}
	if req.Job != nil {
		if err := upsertJobTxn(txn, index, req.Timestamp.UnixNano(), req.Job); err != nil {
			return err
		}
	}
	if req.Eval != nil {
		if err := upsertEvalsTxn(txn, index, []*structs.Evaluation{req.Eval}); err != nil {
			return err
		}
	}
	return txn.commit()
}

// countPlacementTxn counts a new allocation in its deployment.
func countPlacementTxn(txn *writeTxn, index uint64, a *structs.Allocation) error {
	return editDeploymentGroupTxn(txn, index, a, func(g *structs.DeploymentState) {
		g.PlacedAllocs++
		if a.DeploymentStatus.IsCanary() {
			g.PlacedCanaries = append(g.PlacedCanaries, a.ID)
		}
	})
}

// countDeploymentHealthTxn counts the first health an allocation gets in
// its deployment. A healthy allocation is progress: the deadline moves.
func countDeploymentHealthTxn(txn *writeTxn, index uint64, before, after *structs.Allocation) error {
	if after.DeploymentID == "" || before.DeploymentStatus.HasHealth() || !after.DeploymentStatus.HasHealth() {
		return nil
	}
	return editDeploymentGroupTxn(txn, index, after, func(g *structs.DeploymentState) {
		if after.DeploymentStatus.IsHealthy() {
			g.HealthyAllocs++
			if g.ProgressDeadline > 0 {
				g.RequireProgressBy = after.DeploymentStatus.Timestamp.Add(g.ProgressDeadline)
			}
			return
		}
		g.UnhealthyAllocs++
	})
}

func editDeploymentGroupTxn(txn *writeTxn, index uint64, a *structs.Allocation, edit func(*structs.DeploymentState)) error {
	if a.DeploymentID == "" {
		return nil
	}
	d, err := deploymentByIDTxn(txn.Txn, nil, a.DeploymentID)
	if err != nil || d == nil {
		return err
	}
	c := d.Copy()
	g, ok := c.TaskGroups[a.TaskGroup]
	if !ok {
		return nil
	}
	edit(g)
	return upsertDeploymentTxn(txn, index, c)
}

// DeploymentRestore restores a deployment.
func (r *StateRestore) DeploymentRestore(d *structs.Deployment) error {
	return r.insert(TableDeployment, d)
}

// upsertPlanDeploymentsTxn writes a plan's deployment and its status
// changes of other deployments. The plan's own deployment is written as the
// scheduler sent it, except for the counts, which the state store keeps.
func upsertPlanDeploymentsTxn(txn *writeTxn, index uint64, req *structs.ApplyPlanResultsRequest) error {
	for _, u := range req.DeploymentUpdates {
		if err := setDeploymentStatusTxn(txn, index, u, req.UpdatedAt); err != nil {
			return err
		}
	}
	d := req.Deployment
	if d == nil {
		return nil
	}
	existing, err := deploymentByIDTxn(txn.Txn, nil, d.ID)
	if err != nil {
		return err
	}
	d = d.Copy()
	if existing != nil {
		if !existing.Active() {
			// A verdict reached meanwhile stands.
			return nil
		}
		d.Status, d.StatusDescription = existing.Status, existing.StatusDescription
		for name, g := range d.TaskGroups {
			if old, ok := existing.TaskGroups[name]; ok {
				g.PlacedAllocs, g.HealthyAllocs, g.UnhealthyAllocs = old.PlacedAllocs, old.HealthyAllocs, old.UnhealthyAllocs
				g.PlacedCanaries, g.Promoted = old.PlacedCanaries, old.Promoted
				if !old.RequireProgressBy.IsZero() {
					g.RequireProgressBy = old.RequireProgressBy
				}
			}
		}
		d.CreateTime = existing.CreateTime
	} else if req.UpdatedAt != 0 {
		d.CreateTime = req.UpdatedAt
	}
	if req.UpdatedAt != 0 {
		d.ModifyTime = req.UpdatedAt
	}
	return upsertDeploymentTxn(txn, index, d)
}

// deleteDeploymentsTxn removes a purged job's deployments: they describe
// versions that no longer exist.
func deleteDeploymentsTxn(txn *writeTxn, namespace, jobID string) error {
	all, err := deploymentsByJobTxn(txn.Txn, nil, namespace, jobID)
	if err != nil {
		return err
	}
	for _, d := range all {
		if err := txn.Delete(TableDeployment, d); err != nil {
			return err
		}
	}
	return nil
}

// DeploymentKept reports whether a finished deployment must stay whatever
// its age: it is still active, it is its job's newest (what `job status`
// and the scheduler read as the job's latest deployment), or an
// allocation it placed is live (pending, running or unknown: an unknown
// one may come back and be resolved against it).
func (s *StateStore) DeploymentKept(d *structs.Deployment) (bool, error) {
	return deploymentKeptTxn(s.db.Txn(false), d)
}

func deploymentKeptTxn(txn *memdb.Txn, d *structs.Deployment) (bool, error) {
	if d.Active() {
		return true, nil
	}
	all, err := deploymentsByJobTxn(txn, nil, d.Namespace, d.JobID)
	if err != nil {
		return false, err
	}
	if len(all) > 0 && all[0].ID == d.ID {
		return true, nil
	}
	return hasLiveAllocTxn(txn, indexDeployment, d.ID)
}

// DeleteDeployments removes the deployments the garbage collector chose,
// deciding again on the state it applies to (the collector read a
// snapshot): a deployment gone meanwhile is skipped, and so is one that
// must be kept (DeploymentKept). It returns the IDs it removed.
func (s *StateStore) DeleteDeployments(index uint64, ids []string) ([]string, error) {
	txn := s.writeTxn(index)
	defer txn.Abort()
	var deleted []string
	for _, id := range ids {
		d, err := deploymentByIDTxn(txn.Txn, nil, id)
		if err != nil {
			return nil, err
		}
		if d == nil {
			continue
		}
		kept, err := deploymentKeptTxn(txn.Txn, d)
		if err != nil {
			return nil, err
		}
		if kept {
			continue
		}
		if err := txn.Delete(TableDeployment, d); err != nil {
			return nil, err
		}
		deleted = append(deleted, id)
	}
	return deleted, txn.commit()
}
