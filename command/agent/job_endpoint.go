package agent

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"

	"github.com/nomad-edge/nomad/acl"

	"github.com/nomad-edge/nomad/api"
	"github.com/nomad-edge/nomad/jobspec"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// jobRegisterBody is the body of PUT /v1/jobs as upstream's clients send
// it. Two fields of upstream's request are accepted and ignored because
// they change nothing about what runs: Submission (the job file's source,
// which upstream keeps for `job inspect`) and SecretID (an ACL token; there
// are no ACLs yet).
type jobRegisterBody struct {
	api.JobRegisterRequest
	Submission json.RawMessage
	SecretID   string
}

// jobParseBody is the body of PUT /v1/jobs/parse: upstream 1.6's hclv1
// flag is known, and only false (HCL2, what we parse) is accepted.
type jobParseBody struct {
	api.JobsParseRequest
	HCLv1 bool `json:"hclv1"`
}

// jobValidateBody is the body of POST /v1/validate/job.
type jobValidateBody struct {
	api.JobValidateRequest
	SecretID string
}

// jobRegister handles PUT|POST /v1/jobs and /v1/job/{id}.
func (s *HTTPServer) jobRegister(w http.ResponseWriter, r *http.Request) (any, error) {
	var body jobRegisterBody
	if err := decodeBody(r, &body); err != nil {
		return nil, err
	}
	if body.Job == nil {
		return nil, codedErrorf(http.StatusBadRequest, "Job must be specified")
	}
	if id := r.PathValue("id"); id != "" && (body.Job.ID == nil || *body.Job.ID != id) {
		return nil, codedErrorf(http.StatusBadRequest, "Job ID does not match the path: %q", id)
	}
	job, err := s.structJob(r, body.Job, body.WriteRequest)
	if err != nil {
		return nil, err
	}
	// The server validates and lists every problem; its error keeps the
	// invalid-request sentinel across the RPC, so it becomes a 400.
	args := &structs.JobRegisterRequest{
		Job:            job,
		EnforceIndex:   body.EnforceIndex,
		JobModifyIndex: body.JobModifyIndex,
		EvalPriority:   body.EvalPriority,
		PreserveCounts: body.PreserveCounts,
		WriteRequest:   structs.WriteRequest{Region: job.Region, Namespace: job.Namespace},
	}
	var reply structs.JobRegisterResponse
	if err := s.callHandoff(r, "Job.Register", args, &reply); err != nil {
		return nil, err
	}
	setIndex(w, reply.Index)
	return reply, nil
}

// structJob converts a wire job, taking its namespace and region from the
// request when the job names none.
//
// A job with `null` where a group, task or other object belongs is refused
// here, naming each hole, before the conversion dereferences it.
func (s *HTTPServer) structJob(r *http.Request, job *api.Job, body api.WriteRequest) (*structs.Job, error) {
	if nulls := structs.NullElements("Job", job); len(nulls) > 0 {
		return nil, fmt.Errorf("%w: %w", structs.ErrInvalidRequest, &structs.ValidationError{Problems: nulls})
	}
	wr := writeRequest(r)
	if job.Namespace == nil {
		if ns := firstNonEmpty(body.Namespace, wr.Namespace); ns != "" {
			job.Namespace = new(ns)
		}
	}
	if job.Region == nil {
		if region := firstNonEmpty(body.Region, wr.Region, s.agent.config.Region); region != "" {
			job.Region = new(region)
		}
	}
	out := APIJobToStructJob(job)
	out.Canonicalize()
	return out, nil
}

// jobValidate handles PUT|POST /v1/validate/job. Problems with the job are
// the answer, not an error: the status is 200 and ValidationErrors lists
// them.
func (s *HTTPServer) jobValidate(w http.ResponseWriter, r *http.Request) (any, error) {
	var body jobValidateBody
	if err := decodeBody(r, &body); err != nil {
		return nil, err
	}
	if body.Job == nil {
		return nil, codedErrorf(http.StatusBadRequest, "Job must be specified")
	}
	job, err := s.structJob(r, body.Job, body.WriteRequest)
	if err != nil {
		return nil, err
	}
	args := &structs.JobValidateRequest{Job: job, WriteRequest: structs.WriteRequest{Region: job.Region, Namespace: job.Namespace}}
	var reply structs.JobValidateResponse
	if err := s.call(r, "Job.Validate", args, &reply); err != nil {
		return nil, err
	}
	reply.ValidationErrors = nonNil(reply.ValidationErrors)
	return reply, nil
}

// jobParse handles PUT|POST /v1/jobs/parse: HCL in, wire job out.
func (s *HTTPServer) jobParse(w http.ResponseWriter, r *http.Request) (any, error) {
	ns := writeRequest(r).RequestNamespace()
	allow := func(a *acl.ACL) bool { return a.AllowNamespaceOperation(ns, acl.NamespaceCapabilityParseJob) }
	if err := s.authorize(r, allow, fmt.Sprintf("parse-job in namespace %q", ns)); err != nil {
		return nil, err
	}
	var body jobParseBody
	if err := decodeBody(r, &body); err != nil {
		return nil, err
	}
	if body.HCLv1 {
		return nil, codedErrorf(http.StatusBadRequest, "hclv1 is not supported by this version: job files are HCL2 only")
	}
	if body.JobHCL == "" {
		return nil, codedErrorf(http.StatusBadRequest, "Job spec is empty")
	}
	// The agent's file system is not the caller's: the file functions are
	// off, and variables come only from the request, never from the
	// agent's environment.
	job, err := jobspec.ParseWithOptions("input.hcl", []byte(body.JobHCL), jobspec.Options{
		VarContent: body.Variables,
		NoFS:       true,
	})
	if err != nil {
		return nil, codedErrorf(http.StatusBadRequest, "%v", err)
	}
	if body.Canonicalize {
		job.Canonicalize()
	}
	return job, nil
}

// jobList handles GET /v1/jobs.
func (s *HTTPServer) jobList(w http.ResponseWriter, r *http.Request) (any, error) {
	var args structs.JobListRequest
	var reply structs.JobListResponse
	c := readCall{Method: "Job.List", Opts: &args.QueryOptions, Args: &args, Reply: &reply, Meta: &reply.QueryMeta}
	return listQuery(s, w, r, c, func() []*structs.JobListStub { return reply.Jobs }, jobKey(r))
}

// jobGet handles GET /v1/job/{id}.
func (s *HTTPServer) jobGet(w http.ResponseWriter, r *http.Request) (any, error) {
	args := structs.JobSpecificRequest{JobID: r.PathValue("id")}
	var reply structs.SingleJobResponse
	if err := s.query(w, r, readCall{Method: "Job.GetJob", Opts: &args.QueryOptions, Args: &args, Reply: &reply, Meta: &reply.QueryMeta}); err != nil {
		return nil, err
	}
	if reply.Job == nil {
		return nil, codedErrorf(http.StatusNotFound, "job not found")
	}
	return reply.Job, nil
}

// jobAllocations handles GET /v1/job/{id}/allocations (?all=true also
// returns allocations of earlier job versions).
func (s *HTTPServer) jobAllocations(w http.ResponseWriter, r *http.Request) (any, error) {
	all, err := boolParam(r, "all")
	if err != nil {
		return nil, err
	}
	args := structs.JobSpecificRequest{JobID: r.PathValue("id"), All: all}
	var reply structs.JobAllocationsResponse
	c := readCall{Method: "Job.Allocations", Opts: &args.QueryOptions, Args: &args, Reply: &reply, Meta: &reply.QueryMeta}
	items, err := allocStubs(r, func() []*structs.AllocListStub { return reply.Allocations })
	if err != nil {
		return nil, err
	}
	return listQuery(s, w, r, c, items, allocOrder)
}

// jobEvaluations handles GET /v1/job/{id}/evaluations.
func (s *HTTPServer) jobEvaluations(w http.ResponseWriter, r *http.Request) (any, error) {
	args := structs.JobSpecificRequest{JobID: r.PathValue("id")}
	var reply structs.JobEvaluationsResponse
	c := readCall{Method: "Job.Evaluations", Opts: &args.QueryOptions, Args: &args, Reply: &reply, Meta: &reply.QueryMeta}
	return listQuery(s, w, r, c, func() []*structs.Evaluation { return reply.Evaluations }, evalOrder)
}

// jobSummary handles GET /v1/job/{id}/summary.
func (s *HTTPServer) jobSummary(w http.ResponseWriter, r *http.Request) (any, error) {
	args := structs.JobSpecificRequest{JobID: r.PathValue("id")}
	var reply structs.JobSummaryResponse
	if err := s.query(w, r, readCall{Method: "Job.Summary", Opts: &args.QueryOptions, Args: &args, Reply: &reply, Meta: &reply.QueryMeta}); err != nil {
		return nil, err
	}
	if reply.JobSummary == nil {
		return nil, codedErrorf(http.StatusNotFound, "job not found")
	}
	return reply.JobSummary, nil
}

// jobScaleStatus handles GET /v1/job/{id}/scale.
func (s *HTTPServer) jobScaleStatus(w http.ResponseWriter, r *http.Request) (any, error) {
	args := structs.JobSpecificRequest{JobID: r.PathValue("id")}
	var reply structs.JobScaleStatusResponse
	if err := s.query(w, r, readCall{Method: "Job.ScaleStatus", Opts: &args.QueryOptions, Args: &args, Reply: &reply, Meta: &reply.QueryMeta}); err != nil {
		return nil, err
	}
	if reply.JobScaleStatus == nil {
		return nil, codedErrorf(http.StatusNotFound, "job not found")
	}
	return reply.JobScaleStatus, nil
}

// jobDeregister handles DELETE /v1/job/{id} (?purge=true removes the job
// at once instead of leaving it stopped).
func (s *HTTPServer) jobDeregister(w http.ResponseWriter, r *http.Request) (any, error) {
	purge, err := boolParam(r, "purge")
	if err != nil {
		return nil, err
	}
	prio, err := intParam(r, "eval_priority")
	if err != nil {
		return nil, err
	}
	noDelay, err := boolParam(r, "no_shutdown_delay")
	if err != nil {
		return nil, err
	}
	args := &structs.JobDeregisterRequest{JobID: r.PathValue("id"), Purge: purge, NoShutdownDelay: noDelay, EvalPriority: prio, WriteRequest: writeRequest(r)}
	var reply structs.JobDeregisterResponse
	if err := s.call(r, "Job.Deregister", args, &reply); err != nil {
		return nil, err
	}
	setIndex(w, reply.Index)
	return reply, nil
}

// boolParam reads an optional boolean query parameter; a present but
// malformed value is an error rather than false.
func boolParam(r *http.Request, name string) (bool, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, codedErrorf(http.StatusBadRequest, "Invalid %s value %q: must be true or false", name, v)
	}
	return b, nil
}

func firstNonEmpty(vals ...string) string {
	for _, v := range vals {
		if v != "" {
			return v
		}
	}
	return ""
}

// intParam reads an optional integer query parameter; a present but
// malformed value is an error rather than 0.
func intParam(r *http.Request, name string) (int, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, codedErrorf(http.StatusBadRequest, "Invalid %s value %q: must be an integer", name, v)
	}
	return n, nil
}
