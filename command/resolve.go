package command

import (
	"fmt"
	"strings"
	"time"

	"github.com/nomad-edge/nomad/api"
)

// minPrefixLength is the shortest ID prefix accepted for allocations,
// evaluations and nodes; one character matches too much to be useful.
const minPrefixLength = 2

// pickByPrefix returns the one item whose ID is prefix, or the only item
// whose ID starts with it. ok is false when there is no match or several;
// matches then holds the candidates (to be listed for the user).
func pickByPrefix[T any](items []T, id func(T) string, prefix string) (picked T, ok bool, matches []T) {
	for _, it := range items {
		if id(it) == prefix {
			return it, true, nil
		}
		if strings.HasPrefix(id(it), prefix) {
			matches = append(matches, it)
		}
	}
	if len(matches) == 1 {
		return matches[0], true, nil
	}
	var zero T
	return zero, false, matches
}

// checkPrefix validates an ID prefix given on the command line.
func checkPrefix(kind, prefix string) error {
	if len(prefix) < minPrefixLength {
		return fmt.Errorf("%s ID must contain at least %d characters", kind, minPrefixLength)
	}
	return nil
}

// allocArg resolves the allocation a command acts on from its one
// argument, an ID or prefix. stub is nil, with the exit code, when there
// is none.
func (m *Meta) allocArg(args []string, command string, v view) (client *api.Client, stub *api.AllocationListStub, code int) {
	if len(args) != 1 {
		return nil, nil, m.argsError("This command takes one argument: <allocation>", command)
	}
	client, err := m.Client()
	if err != nil {
		m.Ui.Error(fmt.Sprintf("Error initializing client: %v", err))
		return nil, nil, exitError
	}
	stub, ok := m.resolveAlloc(client, args[0], v)
	if !ok {
		return nil, nil, exitError
	}
	return client, stub, exitOK
}

// resolveAlloc finds the one allocation an ID or unique prefix names,
// printing why not (none, or the ambiguous matches) and returning false
// when there is no single answer. alloc status and alloc stop share it so
// that both speak of prefixes the same way.
func (m *Meta) resolveAlloc(client *api.Client, prefix string, v view) (*api.AllocationListStub, bool) {
	if err := checkPrefix("Alloc", prefix); err != nil {
		m.Ui.Error(err.Error())
		return nil, false
	}
	stubs, _, err := client.Allocations().List(&api.QueryOptions{Prefix: prefix})
	if err != nil {
		m.Ui.Error(fmt.Sprintf("Error querying allocations: %v", err))
		return nil, false
	}
	stub, ok, matches := pickByPrefix(stubs, func(a *api.AllocationListStub) string { return a.ID }, prefix)
	if ok {
		return stub, true
	}
	if len(matches) == 0 {
		m.Ui.Error(fmt.Sprintf("No allocation(s) with prefix or id %q found", prefix))
		return nil, false
	}
	rows := make([]allocRow, 0, len(matches))
	for _, a := range matches {
		rows = append(rows, rowFromStub(a))
	}
	m.Ui.Error(fmt.Sprintf("Prefix matched multiple allocations\n\n%s", formatAllocRows(rows, v)))
	return nil, false
}

// resolveNode finds the one node an ID or unique prefix names, printing
// why not when there is no single answer.
func (m *Meta) resolveNode(client *api.Client, prefix string) (*api.NodeListStub, bool) {
	if err := checkPrefix("Node", prefix); err != nil {
		m.Ui.Error(err.Error())
		return nil, false
	}
	nodes, _, err := client.Nodes().List(&api.QueryOptions{Prefix: prefix})
	if err != nil {
		m.Ui.Error(fmt.Sprintf("Error querying nodes: %v", err))
		return nil, false
	}
	node, ok, matches := pickByPrefix(nodes, func(n *api.NodeListStub) string { return n.ID }, prefix)
	if ok {
		return node, true
	}
	if len(matches) == 0 {
		m.Ui.Error(fmt.Sprintf("No node(s) with prefix or id %q found", prefix))
		return nil, false
	}
	m.Ui.Error(fmt.Sprintf("Prefix matched multiple nodes\n\n%s", formatNodeList(matches, view{now: time.Now()})))
	return nil, false
}

// jobArg resolves the job a command acts on from its one argument, a job
// ID or prefix, with a client for the job's namespace. jobID is empty,
// with the exit code, when there is none.
func (m *Meta) jobArg(args []string, command string) (client *api.Client, jobID string, code int) {
	if len(args) != 1 {
		return nil, "", m.argsError("This command takes one argument: <job>", command)
	}
	client, err := m.Client()
	if err != nil {
		m.Ui.Error(fmt.Sprintf("Error initializing client: %v", err))
		return nil, "", exitError
	}
	client, job, ok := m.resolveJob(client, args[0])
	if !ok {
		return nil, "", exitError
	}
	return client, job.ID, exitOK
}

// resolveJob finds the one job whose ID is or starts with prefix,
// explaining on the UI when there is none or several. With -namespace=*
// the same ID in two namespaces is two jobs, and the client returned is
// bound to the job's namespace, since calls about one job name one
// namespace; otherwise it is client.
func (m *Meta) resolveJob(client *api.Client, prefix string) (*api.Client, *api.JobListStub, bool) {
	jobs, _, err := client.Jobs().List(&api.QueryOptions{Prefix: prefix})
	if err != nil {
		m.Ui.Error(fmt.Sprintf("Error finding jobs with prefix %q: %v", prefix, err))
		return nil, nil, false
	}
	all := m.allNamespaces()
	job, ok, matches := pickByPrefix(jobs, func(j *api.JobListStub) string { return j.ID }, prefix)
	if ok && all {
		if same := sameID(jobs, job.ID); len(same) > 1 {
			ok, matches = false, same
		}
	}
	if !ok {
		if len(matches) == 0 {
			m.Ui.Error(fmt.Sprintf("No job(s) with prefix or id %q found", prefix))
		} else {
			m.Ui.Error(fmt.Sprintf("Prefix matched multiple jobs\n\n%s", formatJobList(matches, all)))
		}
		return nil, nil, false
	}
	if all && job.Namespace != "" {
		bound := *m
		bound.namespace = job.Namespace
		if client, err = bound.Client(); err != nil {
			m.Ui.Error(fmt.Sprintf("Error initializing client: %v", err))
			return nil, nil, false
		}
	}
	return client, job, true
}

func sameID(jobs []*api.JobListStub, id string) []*api.JobListStub {
	var out []*api.JobListStub
	for _, j := range jobs {
		if j.ID == id {
			out = append(out, j)
		}
	}
	return out
}
