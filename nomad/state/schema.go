package state

import (
	"fmt"

	"github.com/hashicorp/go-memdb"

	"github.com/nomad-edge/nomad/nomad/structs"
)

// Table names. They are also the keys of the index table, so a blocking
// query passes one of them to Index to learn how fresh its answer is.
const (
	TableIndex       = "index"
	TableNodes       = "nodes"
	TableJobs        = "jobs"
	TableJobSummary  = "job_summary"
	TableEvals       = "evals"
	TableAllocs      = "allocs"
	TableACLPolicies = "acl_policy"
	TableACLTokens   = "acl_token"
	TableNamespaces  = "namespaces"
)

// Index names. memdb requires every table to have a unique "id" index; the
// others serve the lookups the server and scheduler make on hot paths.
const (
	indexID           = "id"
	indexJob          = "job"
	indexNode         = "node"
	indexNodeTerminal = "node_terminal"
	indexEval         = "eval"
	indexFollowupEval = "followup_eval"
	indexDeployment   = "deployment"
	indexSecret       = "secret"
	indexPeriodic     = "periodic"

	// prefixSuffix turns an index name into memdb's prefix scan of it.
	prefixSuffix = "_prefix"
)

// IndexEntry records the raft index at which a table last changed. Blocking
// queries return it so a caller can ask "tell me when this is newer than N".
type IndexEntry struct {
	Key   string
	Value uint64
}

// schema returns the memdb schema of the state store.
func schema() *memdb.DBSchema {
	return &memdb.DBSchema{
		Tables: map[string]*memdb.TableSchema{
			TableIndex:       indexTableSchema(),
			TableNodes:       nodeTableSchema(),
			TableJobs:        jobTableSchema(),
			TableJobSummary:  jobSummaryTableSchema(),
			TableEvals:       evalTableSchema(),
			TableAllocs:      allocTableSchema(),
			TableACLPolicies: aclPolicyTableSchema(),
			TableACLTokens:   aclTokenTableSchema(),
			TableNamespaces:  namespaceTableSchema(),

			// Job lifecycle (job history, revert).
			TableJobVersion:   jobVersionTableSchema(),
			TableScalingEvent: scalingEventTableSchema(),

			TableNodePools: nodePoolTableSchema(),
			// Deployments (the update block).
			TableDeployment: deploymentTableSchema(),
			// Declared site outages (ours).
			TableSiteOutages: siteOutageTableSchema(),
			// One-time tokens (upstream's /v1/acl/token/onetime).
			TableOneTimeTokens: oneTimeTokenTableSchema(),
			// The scheduler configuration (one row).
			TableSchedulerConfig: schedulerConfigTableSchema(),
			TableAutopilotConfig: autopilotConfigTableSchema(),
			// Variables (items encrypted) and root key metadata.
			TableVariables: variablesTableSchema(),
			TableRootKeys:  rootKeysTableSchema(),
			// The catalog of services with provider "nomad".
			TableServiceRegistrations: serviceRegistrationTableSchema(),
			// The secret servers prove themselves with (one row).
			TableServerIdentity: serverIdentityTableSchema(),
			// The CAs of automatic mutual TLS (tls.auto).
			TableTLSCAs: tlsCATableSchema(),
		},
	}
}

func indexTableSchema() *memdb.TableSchema {
	return &memdb.TableSchema{
		Name: TableIndex,
		Indexes: map[string]*memdb.IndexSchema{
			indexID: {Name: indexID, Unique: true, Indexer: &memdb.StringFieldIndex{Field: "Key"}},
		},
	}
}

func nodeTableSchema() *memdb.TableSchema {
	return &memdb.TableSchema{
		Name: TableNodes,
		Indexes: map[string]*memdb.IndexSchema{
			// Plain strings rather than UUIDs so that prefix lookups accept
			// any number of characters, as the CLI's short IDs need.
			indexID: {Name: indexID, Unique: true, Indexer: &memdb.StringFieldIndex{Field: "ID"}},
		},
	}
}

// namespacedIndex keys an object by (Namespace, field). The compound index
// supports prefix scans on its last column, which is how job ID prefixes
// within one namespace are found.
func namespacedIndex(field string) *memdb.CompoundIndex {
	return &memdb.CompoundIndex{Indexes: []memdb.Indexer{
		&memdb.StringFieldIndex{Field: "Namespace"},
		&memdb.StringFieldIndex{Field: field},
	}}
}

func jobTableSchema() *memdb.TableSchema {
	return &memdb.TableSchema{
		Name: TableJobs,
		Indexes: map[string]*memdb.IndexSchema{
			indexID: {Name: indexID, Unique: true, Indexer: namespacedIndex("ID")},
			// The jobs the leader's periodic dispatcher launches: it
			// reads (and watches) them alone, not every job on every
			// job change.
			indexPeriodic: {Name: indexPeriodic, Indexer: &memdb.ConditionalIndex{Conditional: jobPeriodicActive}},
		},
	}
}

func jobPeriodicActive(obj any) (bool, error) {
	j, ok := obj.(*structs.Job)
	if !ok {
		return false, fmt.Errorf("jobs table holds %T, want *structs.Job", obj)
	}
	return j.IsPeriodicActive(), nil
}

func jobSummaryTableSchema() *memdb.TableSchema {
	return &memdb.TableSchema{
		Name: TableJobSummary,
		Indexes: map[string]*memdb.IndexSchema{
			indexID: {Name: indexID, Unique: true, Indexer: namespacedIndex("JobID")},
		},
	}
}

func evalTableSchema() *memdb.TableSchema {
	return &memdb.TableSchema{
		Name: TableEvals,
		Indexes: map[string]*memdb.IndexSchema{
			indexID: {Name: indexID, Unique: true, Indexer: &memdb.StringFieldIndex{Field: "ID"}},
			// Job status and blocked-eval cancellation read a job's evals
			// on every write. Evals without a job are simply not indexed.
			indexJob: {Name: indexJob, AllowMissing: true, Indexer: namespacedIndex("JobID")},
		},
	}
}

func allocTableSchema() *memdb.TableSchema {
	return &memdb.TableSchema{
		Name: TableAllocs,
		Indexes: map[string]*memdb.IndexSchema{
			indexID: {Name: indexID, Unique: true, Indexer: &memdb.StringFieldIndex{Field: "ID"}},
			// A client's blocking query for its allocations watches this.
			indexNode: {Name: indexNode, Indexer: &memdb.StringFieldIndex{Field: "NodeID"}},
			// The scheduler's capacity accounting and the heartbeat logic
			// want only a node's live allocations; keying on the terminal
			// flag lets them skip the history. The flag is
			// Allocation.TerminalStatus, so unknown allocations are live.
			indexNodeTerminal: {Name: indexNodeTerminal, Indexer: &memdb.CompoundIndex{Indexes: []memdb.Indexer{
				&memdb.StringFieldIndex{Field: "NodeID"},
				&memdb.ConditionalIndex{Conditional: allocTerminal},
			}}},
			indexJob: {Name: indexJob, Indexer: namespacedIndex("JobID")},
			// Placements made by one evaluation; allocations written
			// without an eval (tests, restores of old data) are skipped.
			indexEval: {Name: indexEval, AllowMissing: true, Indexer: &memdb.StringFieldIndex{Field: "EvalID"}},
			// The allocations a delayed follow-up evaluation waits for:
			// when the last of them reports, the evaluation is cancelled.
			// Without it each report scans the whole job.
			indexFollowupEval: {Name: indexFollowupEval, AllowMissing: true, Indexer: &memdb.StringFieldIndex{Field: "FollowupEvalID"}},
			// The allocations a deployment placed: the garbage collector
			// keeps a deployment while any of them is live.
			indexDeployment: {Name: indexDeployment, AllowMissing: true, Indexer: &memdb.StringFieldIndex{Field: "DeploymentID"}},
		},
	}
}

func allocTerminal(obj any) (bool, error) {
	a, ok := obj.(*structs.Allocation)
	if !ok {
		return false, fmt.Errorf("allocs table holds %T, want *structs.Allocation", obj)
	}
	return a.TerminalStatus(), nil
}
