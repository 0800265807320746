package scheduler

import (
	"fmt"
	"hash/fnv"
	"reflect"
	"sort"

	"github.com/nomad-edge/nomad/nomad/structs"
)

// NodePoolAll matches every node pool.
const NodePoolAll = "all"

// taintedNodes returns the nodes of allocs on which allocations may not
// stay as they are: down, disconnected, draining or ineligible ones. A node
// that no longer exists maps to nil.
func taintedNodes(state State, allocs []*structs.Allocation) (map[string]*structs.Node, error) {
	out := map[string]*structs.Node{}
	seen := map[string]bool{}
	for _, a := range allocs {
		if seen[a.NodeID] {
			continue
		}
		seen[a.NodeID] = true
		node, err := state.NodeByID(nil, a.NodeID)
		if err != nil {
			return nil, fmt.Errorf("looking up node %s: %w", a.NodeID, err)
		}
		switch {
		case node == nil:
			out[a.NodeID] = nil
		case node.Status == structs.NodeStatusDown,
			node.Status == structs.NodeStatusDisconnected,
			node.Drain,
			node.SchedulingEligibility == structs.NodeSchedulingIneligible:
			out[a.NodeID] = node
		}
	}
	return out, nil
}

// readyNodes is the candidate node list of a job: ready nodes in its
// datacenters and node pool, sorted by ID so that the seeded shuffle is
// reproducible whatever order the state store iterates in.
type readyNodes struct {
	nodes []*structs.Node
	// byDC counts the candidates per datacenter (AllocMetric.NodesAvailable).
	byDC map[string]int
	// inPool counts the ready nodes in the job's pool, any datacenter.
	inPool int
}

func readyNodesFor(state State, job *structs.Job) (*readyNodes, error) {
	iter, err := state.Nodes(nil)
	if err != nil {
		return nil, fmt.Errorf("listing nodes: %w", err)
	}
	out := &readyNodes{byDC: map[string]int{}}
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		node := raw.(*structs.Node)
		if !node.Ready() || !nodePoolMatches(job.NodePool, node) {
			continue
		}
		out.inPool++
		if !datacenterMatches(job.Datacenters, node.Datacenter) {
			continue
		}
		out.nodes = append(out.nodes, node)
		out.byDC[node.Datacenter]++
	}
	sort.Slice(out.nodes, func(i, j int) bool { return out.nodes[i].ID < out.nodes[j].ID })
	return out, nil
}

// datacenterMatches reports whether dc matches one of the job's
// datacenter patterns; "*" matches any run of characters.
func datacenterMatches(patterns []string, dc string) bool {
	for _, p := range patterns {
		if globMatch(p, dc) {
			return true
		}
	}
	return false
}

func globMatch(pattern, s string) bool {
	// Classic two-pointer wildcard match with backtracking to the last star.
	p, i, star, mark := 0, 0, -1, 0
	for i < len(s) {
		switch {
		case p < len(pattern) && pattern[p] == '*':
			star, mark = p, i
			p++
		case p < len(pattern) && pattern[p] == s[i]:
			p++
			i++
		case star >= 0:
			p = star + 1
			mark++
			i = mark
		default:
			return false
		}
	}
	for p < len(pattern) && pattern[p] == '*' {
		p++
	}
	return p == len(pattern)
}

func nodePoolMatches(pool string, node *structs.Node) bool {
	np := node.NodePool
	if np == "" {
		np = structs.DefaultNodePool
	}
	if pool == "" {
		pool = structs.DefaultNodePool
	}
	return pool == NodePoolAll || pool == np
}

// shuffleSeed derives the node shuffle's seed from the evaluation and the
// snapshot, so that the same evaluation over the same state places the same.
func shuffleSeed(evalID string, index uint64) uint64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(evalID))
	return h.Sum64() ^ index
}

// tasksUpdated reports whether moving an allocation of group from job a to
// job b needs new tasks (a destructive update). Count, meta of the job and
// group, reschedule and restart policies and the disconnect fields are
// applied in place (disconnect changes are in-place updates, see
// docs/concepts/disconnected-clients.md, "Configuration and validation");
// volumes and volume mounts are not, as upstream: mounts are made when a
// task starts, and a new source may need another node.
// TODO(in-place placement): a change of datacenters, node pool or
// constraints is destructive for now; upstream re-checks the allocation's
// own node instead and updates in place when it still fits.
func tasksUpdated(a, b *structs.Job, group string) bool {
	if a == nil || b == nil {
		return true
	}
	at, bt := a.LookupTaskGroup(group), b.LookupTaskGroup(group)
	if at == nil || bt == nil || len(at.Tasks) != len(bt.Tasks) {
		return true
	}
	if !reflect.DeepEqual(a.Datacenters, b.Datacenters) || a.NodePool != b.NodePool ||
		!reflect.DeepEqual(a.Constraints, b.Constraints) || !reflect.DeepEqual(a.Affinities, b.Affinities) ||
		!reflect.DeepEqual(at.Constraints, bt.Constraints) || !reflect.DeepEqual(at.Affinities, bt.Affinities) ||
		!reflect.DeepEqual(at.EphemeralDisk, bt.EphemeralDisk) || !reflect.DeepEqual(at.Networks, bt.Networks) ||
		!reflect.DeepEqual(a.Spreads, b.Spreads) || !reflect.DeepEqual(at.Spreads, bt.Spreads) ||
		!reflect.DeepEqual(at.Volumes, bt.Volumes) {
		return true
	}
	for _, t := range bt.Tasks {
		o := at.LookupTask(t.Name)
		if o == nil || taskChanged(o, t) {
			return true
		}
	}
	return false
}

func taskChanged(a, b *structs.Task) bool {
	return a.Driver != b.Driver || a.User != b.User || a.Leader != b.Leader || !reflect.DeepEqual(a.Lifecycle, b.Lifecycle) ||
		a.KillTimeout != b.KillTimeout || a.KillSignal != b.KillSignal ||
		!reflect.DeepEqual(a.Config, b.Config) || !reflect.DeepEqual(a.Env, b.Env) ||
		!reflect.DeepEqual(a.Resources, b.Resources) || !reflect.DeepEqual(a.Meta, b.Meta) ||
		!reflect.DeepEqual(a.Constraints, b.Constraints) || !reflect.DeepEqual(a.Affinities, b.Affinities) ||
		!reflect.DeepEqual(a.Artifacts, b.Artifacts) || // fetched before the first start only
		!reflect.DeepEqual(a.Templates, b.Templates) || !reflect.DeepEqual(a.Identity, b.Identity) || !reflect.DeepEqual(a.Identities, b.Identities) || // the runner keeps the ones it started with
		!reflect.DeepEqual(a.VolumeMounts, b.VolumeMounts) // mounted when the task starts
}

// markStoppedLost records as lost the allocations the server already
// stopped but whose down node never confirmed it, so that summaries do
// not count them as running forever. An unknown one is left unknown: the
// servers lost contact with it while it ran, so its task may still run on
// the cut-off node, and lost would claim more than they know (see
// docs/concepts/disconnected-clients.md, "Operator actions"). Its client
// reports how it ended when it returns.
func markStoppedLost(plan *structs.Plan, allocs []*structs.Allocation, tainted map[string]*structs.Node) {
	for _, a := range allocs {
		node, ok := tainted[a.NodeID]
		if !ok || (node != nil && !node.TerminalStatus()) {
			continue
		}
		if a.ServerTerminalStatus() && !a.ClientTerminalStatus() && a.ClientStatus != structs.AllocClientStatusUnknown {
			plan.AppendStoppedAlloc(a, a.DesiredDescription, structs.AllocClientStatusLost, "")
		}
	}
}
