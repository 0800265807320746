package agent

import (
	"cmp"
	"net/http"
	"slices"
	"strconv"

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

// page orders items by key (descending with reverse), drops those before
// the next token, keeps those the filter selects and cuts the page at
// per_page. When more remain, the key of the first of them is the
// X-Nomad-NextToken header. An item whose fields do not fit the filter
// (a selector naming no field) is a 400, as upstream.
func page[T any](w http.ResponseWriter, o listOptions, items []T, key func(T) string) ([]T, error) {
	sorted := slices.Clone(items)
	slices.SortStableFunc(sorted, func(a, b T) int {
		c := cmp.Compare(key(a), key(b))
		if o.reverse {
			return -c
		}
		return c
	})
	out := make([]T, 0, len(sorted))
	for _, it := range sorted {
		k := key(it)
		if o.nextToken != "" && ((!o.reverse && k < o.nextToken) || (o.reverse && k > o.nextToken)) {
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
			w.Header().Set("X-Nomad-NextToken", k)
			break
		}
		out = append(out, it)
	}
	return out, nil
}

// listQuery is a read whose answer is a list: it refuses bad list
// parameters before the call, makes it, and pages what items returns.
func listQuery[T any](s *HTTPServer, w http.ResponseWriter, r *http.Request, c readCall, items func() []T, key func(T) string) (any, error) {
	o, err := parseListOptions(r)
	if err != nil {
		return nil, err
	}
	if err := s.query(w, r, c); err != nil {
		return nil, err
	}
	return page(w, o, nonNil(items()), key)
}

// jobKey orders jobs by ID; a list across namespaces (namespace=*) by
// namespace and then ID, so a page boundary never falls between two jobs
// of the same ID.
func jobKey(r *http.Request) func(*structs.JobListStub) string {
	if r.URL.Query().Get("namespace") == "*" {
		return func(j *structs.JobListStub) string { return j.Namespace + "." + j.ID }
	}
	return func(j *structs.JobListStub) string { return j.ID }
}

func allocKey(a *structs.AllocListStub) string { return a.ID }

func evalKey(e *structs.Evaluation) string { return e.ID }

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
