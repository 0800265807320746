package upstreamrpc

import (
	"fmt"

	"github.com/hashicorp/go-msgpack/v2/codec"

	"github.com/nomad-edge/nomad/nomad/structs"
)

// recordKind is what one type byte of upstream's snapshot stream means
// and what becomes of its records: carried (decoded into our type by
// carry) or not (reason says why).
type recordKind struct {
	name   string
	carry  func(t *translation, raw []byte) error
	reason string
}

// Reasons shared by several kinds.
const (
	reasonNoACLFeature = "this version has no ACL roles, SSO auth methods or binding rules; tokens naming roles keep only their policies"
	reasonKeyring      = "upstream encrypts variables with root keys kept in each server's keystore (data_dir/server/keystore), which a snapshot does not contain, so they cannot be decrypted here; re-create them with `nomad var put`"
)

// recordKinds is upstream v1.6.5's snapshot record types, found by
// decoding the snapshots its servers write (testdata/README.md): each
// byte's objects carry the field names of the kind named. A byte not
// here is one that was not seen (upstream has more, for features such as
// CSI volumes and Vault token accessors that never showed in those
// snapshots); its records are skipped and counted.
var recordKinds = map[byte]recordKind{
	0:  {name: "Node", carry: carryInto(func(s *SnapshotState) *[]*structs.Node { return &s.Nodes }, func(n *structs.Node) string { return n.ID })},
	1:  {name: "Job", carry: carryInto(func(s *SnapshotState) *[]*structs.Job { return &s.Jobs }, func(j *structs.Job) string { return j.ID })},
	2:  {name: "Index", carry: (*translation).index},
	3:  {name: "Evaluation", carry: carryInto(func(s *SnapshotState) *[]*structs.Evaluation { return &s.Evals }, func(e *structs.Evaluation) string { return e.ID })},
	4:  {name: "Allocation", carry: carryInto(func(s *SnapshotState) *[]*structs.Allocation { return &s.Allocs }, func(a *structs.Allocation) string { return a.ID })},
	5:  {name: "TimeTable", reason: "upstream's table of raft indexes by wall-clock time, which its garbage collector reads; ours judges an object's age by the object's own times"},
	6:  {name: "PeriodicLaunch", reason: "ours derives a periodic job's last launch from its children's IDs (carried with Jobs)"},
	7:  {name: "JobSummary", carry: carryInto(func(s *SnapshotState) *[]*structs.JobSummary { return &s.JobSummaries }, func(j *structs.JobSummary) string { return j.JobID })},
	9:  {name: "JobVersion", carry: carryInto(func(s *SnapshotState) *[]*structs.Job { return &s.JobVersions }, func(j *structs.Job) string { return j.ID })},
	10: {name: "Deployment", carry: carryInto(func(s *SnapshotState) *[]*structs.Deployment { return &s.Deployments }, func(d *structs.Deployment) string { return d.ID })},
	11: {name: "ACLPolicy", carry: carryInto(func(s *SnapshotState) *[]*structs.ACLPolicy { return &s.ACLPolicies }, func(p *structs.ACLPolicy) string { return p.Name })},
	12: {name: "ACLToken", carry: (*translation).aclToken},
	13: {name: "SchedulerConfig", carry: (*translation).schedulerConfig},
	14: {name: "ClusterMetadata", reason: "the cluster's ID and creation time: the cluster restored into keeps its own"},
	16: {name: "ScalingPolicy", carry: carryInto(func(s *SnapshotState) *[]*structs.ScalingPolicy { return &s.ScalingPolicies }, func(p *structs.ScalingPolicy) string { return p.ID })},
	19: {name: "ScalingEvents", carry: carryInto(func(s *SnapshotState) *[]*structs.JobScalingEvents { return &s.ScalingEvents }, func(e *structs.JobScalingEvents) string { return e.JobID })},
	21: {name: "ServiceRegistration", carry: carryInto(func(s *SnapshotState) *[]*structs.ServiceRegistration { return &s.ServiceRegistrations }, func(r *structs.ServiceRegistration) string { return r.ID })},
	22: {name: "Variable", reason: reasonKeyring},
	23: {name: "VariablesQuota", reason: "per-namespace sums of variable sizes, for upstream's Enterprise quotas; no variable is carried"},
	24: {name: "RootKeyMeta", reason: "metadata of upstream's root keys, whose material is in each upstream server's keystore (data_dir/server/keystore), not in the snapshot"},
	25: {name: "ACLRole", reason: reasonNoACLFeature},
	26: {name: "ACLAuthMethod", reason: reasonNoACLFeature},
	27: {name: "ACLBindingRule", reason: reasonNoACLFeature},
	28: {name: "NodePool", carry: carryInto(func(s *SnapshotState) *[]*structs.NodePool { return &s.NodePools }, func(p *structs.NodePool) string { return p.Name })},
	64: {name: "Namespace", carry: carryInto(func(s *SnapshotState) *[]*structs.Namespace { return &s.Namespaces }, func(n *structs.Namespace) string { return n.Name })},
}

// reasonTokenRoles is why a token's roles are dropped.
const reasonTokenRoles = "tokens carried with their policies only: the ACL roles they name do not exist here"

// reasonUnknown is why a record of a byte not in recordKinds is skipped.
const reasonUnknown = "a record type upstream 1.6.5 was not seen to write; skipped"

// recordKindName names a type byte for messages.
func recordKindName(typ byte) string {
	if k, ok := recordKinds[typ]; ok {
		return k.name
	}
	return "unknown"
}

// carryInto makes a kind's carry: decode the record into a new T, check
// that it names itself (key), and append it to the list field picks.
func carryInto[T any](field func(*SnapshotState) *[]*T, key func(*T) string) func(*translation, []byte) error {
	return func(t *translation, raw []byte) error {
		obj := new(T)
		if err := decodeRecord(raw, obj); err != nil {
			return err
		}
		if key(obj) == "" {
			return fmt.Errorf("the record names no ID")
		}
		list := field(t.state)
		*list = append(*list, obj)
		return nil
	}
}

// decodeRecord decodes one record's bytes with upstream's settings.
func decodeRecord(raw []byte, out any) error {
	if err := codec.NewDecoderBytes(raw, Handle).Decode(out); err != nil {
		return fmt.Errorf("decoding: %w", err)
	}
	return nil
}

// translation collects a snapshot's records as they are read.
type translation struct {
	state *SnapshotState
	// skipped counts the records not carried, by type byte, in the order
	// first seen.
	skipped map[byte]int
	order   []byte
	// tokenRoles counts the carried tokens that named ACL roles.
	tokenRoles int
}

func newTranslation() *translation {
	return &translation{state: &SnapshotState{Indexes: map[string]uint64{}}, skipped: map[byte]int{}}
}

// add takes one record of type typ.
func (t *translation) add(typ byte, raw []byte) error {
	k, ok := recordKinds[typ]
	if ok && k.carry != nil {
		return k.carry(t, raw)
	}
	if t.skipped[typ] == 0 {
		t.order = append(t.order, typ)
	}
	t.skipped[typ]++
	return nil
}

// index takes an entry of upstream's index table.
func (t *translation) index(raw []byte) error {
	var e struct {
		Key   string
		Value uint64
	}
	if err := decodeRecord(raw, &e); err != nil {
		return err
	}
	if e.Key == "" {
		return fmt.Errorf("the index entry names no table")
	}
	t.state.Indexes[e.Key] = e.Value
	t.state.Index = max(t.state.Index, e.Value)
	return nil
}

// aclToken takes an ACL token. A token that names ACL roles loses them
// (ours has none): it is carried with its policies alone and counted
// in the report.
func (t *translation) aclToken(raw []byte) error {
	if err := carryInto(func(s *SnapshotState) *[]*structs.ACLToken { return &s.ACLTokens }, func(t *structs.ACLToken) string { return t.AccessorID })(t, raw); err != nil {
		return err
	}
	var roles struct{ Roles []any }
	if err := decodeRecord(raw, &roles); err != nil {
		return err
	}
	if len(roles.Roles) > 0 {
		t.tokenRoles++
	}
	return nil
}

// schedulerConfig takes the one scheduler configuration.
func (t *translation) schedulerConfig(raw []byte) error {
	if t.state.SchedulerConfig != nil {
		return fmt.Errorf("a second scheduler configuration")
	}
	c := new(structs.SchedulerConfiguration)
	if err := decodeRecord(raw, c); err != nil {
		return err
	}
	t.state.SchedulerConfig = c
	return nil
}

// finish brings what was read to our model where the two differ beyond
// field names, and writes the report.
func (t *translation) finish() *SnapshotState {
	s := t.state
	for _, n := range s.Nodes {
		markUpstream(n)
	}
	// Upstream keeps a group's scaling policy in its own table, with the
	// indexes; its copy in the job has zero ones. Ours has only the copy
	// in the group.
	byID := make(map[string]*structs.ScalingPolicy, len(s.ScalingPolicies))
	for _, p := range s.ScalingPolicies {
		byID[p.ID] = p
	}
	for _, jobs := range [][]*structs.Job{s.Jobs, s.JobVersions} {
		for _, j := range jobs {
			for _, tg := range j.TaskGroups {
				if tg == nil || tg.Scaling == nil {
					continue
				}
				if p, ok := byID[tg.Scaling.ID]; ok {
					tg.Scaling.CreateIndex, tg.Scaling.ModifyIndex = p.CreateIndex, p.ModifyIndex
				}
			}
		}
	}
	for _, typ := range t.order {
		k, ok := recordKinds[typ]
		nc := NotCarried{Kind: k.name, Count: t.skipped[typ], Reason: k.reason}
		if !ok {
			nc.Kind, nc.Reason = fmt.Sprintf("type byte %d", typ), reasonUnknown
		}
		s.NotCarried = append(s.NotCarried, nc)
	}
	if t.tokenRoles > 0 {
		s.NotCarried = append(s.NotCarried, NotCarried{Kind: "ACLToken.Roles", Count: t.tokenRoles, Reason: reasonTokenRoles})
	}
	return s
}
