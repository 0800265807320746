package agent

import (
	"cmp"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/hashicorp/go-bexpr"

	"github.com/nomad-edge/nomad/nomad/structs"
)

// listOptions are the parameters every list endpoint honours as upstream:
// a filter expression over the list's stubs, and a page of them.
type listOptions struct {
	filter    *bexpr.Evaluator
	perPage   int
	nextToken string
	reverse   bool
}

// parseListOptions reads filter, per_page, next_token and reverse. A
// malformed value is a 400 naming the parameter, before any work is done:
// a list that silently ignored a filter would return everything.
func parseListOptions(r *http.Request) (listOptions, error) {
	v := r.URL.Query()
	var o listOptions
	if s := v.Get("filter"); s != "" {
		ev, err := bexpr.CreateEvaluator(s)
		if err != nil {
			return o, codedErrorf(http.StatusBadRequest, "failed to read filter expression: %v", err)
		}
		o.filter = ev
	}
	if s := v.Get("per_page"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 {
			return o, codedErrorf(http.StatusBadRequest, "Invalid per_page %q: must be a non-negative integer", s)
		}
		o.perPage = n
	}
	o.nextToken = v.Get("next_token")
	if v.Has("reverse") {
		b, err := boolParam(r, "reverse")
		if err != nil {
			return o, err
		}
		o.reverse = b || v.Get("reverse") == ""
	}
	return o, nil
}

// listKey is where an entry sits in its list: by id, or for the lists
// kept in creation order (allocations and evaluations newest first, ACL
// tokens oldest first) by create index and then id.
type listKey struct {
	index uint64
	id    string
}

// listOrder is a list's order and the form of its next tokens.
type listOrder[T any] struct {
	key func(T) listKey
	// byIndex is -1 for newest first, 1 for oldest first, 0 for by id.
	byIndex int
}

func (o listOrder[T]) token(k listKey) string {
	if o.byIndex != 0 {
		return strconv.FormatUint(k.index, 10) + "." + k.id
	}
	return k.id
}

func (o listOrder[T]) parseToken(s string) (listKey, error) {
	if o.byIndex == 0 {
		return listKey{id: s}, nil
	}
	idx, id, ok := strings.Cut(s, ".")
	n, err := strconv.ParseUint(idx, 10, 64)
	if !ok || err != nil {
		return listKey{}, codedErrorf(http.StatusBadRequest, "Invalid next_token %q: use the X-Nomad-NextToken of the previous page", s)
	}
	return listKey{index: n, id: id}, nil
}

// compare orders a before b (<0) as the list does.
func (o listOrder[T]) compare(a, b listKey) int {
	if o.byIndex != 0 && a.index != b.index {
		return o.byIndex * cmp.Compare(a.index, b.index)
	}
	return cmp.Compare(a.id, b.id)
}

// page orders items (reversed with reverse), drops those before the next
// token, keeps those the filter selects and cuts the page at per_page.
// When more remain, the token of the first of them is the
// X-Nomad-NextToken header. An item whose fields do not fit the filter
// (a selector naming no field) is a 400, as upstream.
func page[T any](w http.ResponseWriter, o listOptions, items []T, ord listOrder[T]) ([]T, error) {
	var start listKey
	if o.nextToken != "" {
		k, err := ord.parseToken(o.nextToken)
		if err != nil {
			return nil, err
		}
		start = k
	}
	dir := 1
	if o.reverse {
		dir = -1
	}
	sorted := slices.Clone(items)
	slices.SortStableFunc(sorted, func(a, b T) int { return dir * ord.compare(ord.key(a), ord.key(b)) })
	out := make([]T, 0, len(sorted))
	for _, it := range sorted {
		k := ord.key(it)
		if o.nextToken != "" && dir*ord.compare(k, start) < 0 {
			continue
		}
		if o.filter != nil {
			ok, err := o.filter.Evaluate(it)
			if err != nil {
				return nil, codedErrorf(http.StatusBadRequest, "failed to apply filter: %v", err)
			}
			if !ok {
				continue
			}
		}
		if o.perPage > 0 && len(out) == o.perPage {
			w.Header().Set("X-Nomad-NextToken", ord.token(k))
			break
		}
		out = append(out, it)
	}
	return out, nil
}

// listQuery is a read whose answer is a list: it refuses bad list
// parameters before the call, makes it, and pages what items returns.
func listQuery[T any](s *HTTPServer, w http.ResponseWriter, r *http.Request, c readCall, items func() []T, ord listOrder[T]) (any, error) {
	o, err := parseListOptions(r)
	if err != nil {
		return nil, err
	}
	if err := s.query(w, r, c); err != nil {
		return nil, err
	}
	return page(w, o, nonNil(items()), ord)
}

// byID is the order of the lists sorted by a name or ID.
func byID[T any](id func(T) string) listOrder[T] {
	return listOrder[T]{key: func(t T) listKey { return listKey{id: id(t)} }}
}

// jobKey orders jobs by ID; a list across namespaces (namespace=*) by
// namespace and then ID, so a page boundary never falls between two jobs
// of the same ID.
func jobKey(r *http.Request) listOrder[*structs.JobListStub] {
	if r.URL.Query().Get("namespace") == "*" {
		return byID(func(j *structs.JobListStub) string { return j.Namespace + "." + j.ID })
	}
	return byID(func(j *structs.JobListStub) string { return j.ID })
}

var allocOrder = listOrder[*structs.AllocListStub]{
	key:     func(a *structs.AllocListStub) listKey { return listKey{index: a.CreateIndex, id: a.ID} },
	byIndex: -1,
}

var fullAllocOrder = listOrder[allocJSON]{
	key:     func(a allocJSON) listKey { return listKey{index: a.CreateIndex, id: a.ID} },
	byIndex: -1,
}

var evalOrder = listOrder[*structs.Evaluation]{
	key:     func(e *structs.Evaluation) listKey { return listKey{index: e.CreateIndex, id: e.ID} },
	byIndex: -1,
}

var deploymentOrder = listOrder[*structs.Deployment]{
	key:     func(d *structs.Deployment) listKey { return listKey{index: d.CreateIndex, id: d.ID} },
	byIndex: -1,
}

var tokenOrder = listOrder[*structs.ACLTokenListStub]{
	key:     func(t *structs.ACLTokenListStub) listKey { return listKey{index: t.CreateIndex, id: t.AccessorID} },
	byIndex: 1,
}

// evalSelectors are GET /v1/evaluations' own narrowing parameters,
// upstream's filter_job_id and filter_eval_status.
type evalSelectors struct {
	jobID, status string
}

func evalListSelectors(r *http.Request) (evalSelectors, error) {
	v := r.URL.Query()
	sel := evalSelectors{jobID: v.Get("filter_job_id"), status: v.Get("filter_eval_status")}
	switch sel.status {
	case "", structs.EvalStatusBlocked, structs.EvalStatusPending, structs.EvalStatusComplete,
		structs.EvalStatusFailed, structs.EvalStatusCancelled:
		return sel, nil
	}
	return sel, codedErrorf(http.StatusBadRequest, "Invalid filter_eval_status %q: must be one of blocked, pending, complete, failed, canceled", sel.status)
}

func (sel evalSelectors) keep(evals []*structs.Evaluation) []*structs.Evaluation {
	if sel.jobID == "" && sel.status == "" {
		return evals
	}
	var out []*structs.Evaluation
	for _, e := range evals {
		if (sel.jobID == "" || e.JobID == sel.jobID) && (sel.status == "" || e.Status == sel.status) {
			out = append(out, e)
		}
	}
	return out
}

// allocStubs honours task_states=false, upstream's way of asking an
// allocation list for less: the stubs come without their TaskStates.
func allocStubs(r *http.Request, stubs func() []*structs.AllocListStub) (func() []*structs.AllocListStub, error) {
	if !r.URL.Query().Has("task_states") {
		return stubs, nil
	}
	keep, err := boolParam(r, "task_states")
	if err != nil || keep {
		return stubs, err
	}
	return func() []*structs.AllocListStub {
		out := make([]*structs.AllocListStub, 0, len(stubs()))
		for _, a := range stubs() {
			c := *a
			c.TaskStates = nil
			out = append(out, &c)
		}
		return out
	}, nil
}
