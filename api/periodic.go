package api

import (
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/hashicorp/cronexpr"
)

// PeriodicSpecCron is the periodic block's only spec type.
const PeriodicSpecCron = "cron"

// PeriodicConfig is a job's `periodic` block: the job is a template the
// servers launch a child job from at each cron instant.
type PeriodicConfig struct {
	Enabled *bool
	// Spec is the legacy single expression (`cron`); Specs is `crons`.
	Spec            *string
	Specs           []string
	SpecType        *string
	ProhibitOverlap *bool
	TimeZone        *string
}

// Canonicalize fills the block's defaults as upstream's client does.
func (p *PeriodicConfig) Canonicalize() {
	if p.Enabled == nil {
		p.Enabled = new(true)
	}
	if p.Spec == nil {
		p.Spec = new("")
	}
	if p.Specs == nil {
		p.Specs = []string{}
	}
	if p.SpecType == nil {
		p.SpecType = new(PeriodicSpecCron)
	}
	if p.ProhibitOverlap == nil {
		p.ProhibitOverlap = new(false)
	}
	if p.TimeZone == nil || *p.TimeZone == "" {
		p.TimeZone = new("UTC")
	}
}

// Dispatch payload requirements of a parameterized job.
const (
	DispatchPayloadOptional  = "optional"
	DispatchPayloadRequired  = "required"
	DispatchPayloadForbidden = "forbidden"
)

// ParameterizedJobConfig is a job's `parameterized` block: the job never
// runs itself; each dispatch launches a child with a payload and meta.
type ParameterizedJobConfig struct {
	Payload      string
	MetaRequired []string
	MetaOptional []string
}

// DispatchPayloadConfig is a task's `dispatch_payload` block: the file in
// the task's local/ directory the payload is written to.
type DispatchPayloadConfig struct {
	File string
}

// IsPeriodic reports whether the job is a periodic template.
func (j *Job) IsPeriodic() bool { return j.Periodic != nil }

// IsParameterized reports whether the job is a parameterized template.
func (j *Job) IsParameterized() bool { return j.ParameterizedJob != nil && !j.Dispatched }

// PeriodicForceResponse answers PUT /v1/job/:id/periodic/force.
type PeriodicForceResponse struct {
	EvalID          string
	EvalCreateIndex uint64
	WriteMeta
}

// JobDispatchRequest is the body of PUT /v1/job/:id/dispatch. Payload is
// base64 on the wire, as encoding/json writes a []byte.
type JobDispatchRequest struct {
	JobID   string
	Payload []byte
	Meta    map[string]string
	// Priority, when set, is the child's priority instead of the parent's.
	Priority int `json:",omitempty"`
	WriteRequest
}

// JobDispatchResponse answers a dispatch.
type JobDispatchResponse struct {
	DispatchedJobID string
	EvalID          string
	EvalCreateIndex uint64
	JobCreateIndex  uint64
	WriteMeta
}

// PeriodicForce launches a periodic job's child now (PUT
// /v1/job/:id/periodic/force), whatever its schedule and overlap rule, and
// returns the ID of the child's evaluation.
func (j *Jobs) PeriodicForce(jobID string, w *WriteOptions) (string, *WriteMeta, error) {
	var resp PeriodicForceResponse
	wm, err := j.client.write(http.MethodPut, jobPath(jobID, "/periodic/force"), nil, &resp, w)
	if err != nil {
		return "", nil, err
	}
	return resp.EvalID, wm, nil
}

// DispatchOptions tune Jobs.DispatchOpts.
type DispatchOptions struct {
	Meta    map[string]string
	Payload []byte
	// Priority, when set, is the child's priority instead of the parent's.
	Priority int
}

// Dispatch launches a child of a parameterized job with meta and payload
// (PUT /v1/job/:id/dispatch).
func (j *Jobs) Dispatch(jobID string, meta map[string]string, payload []byte, w *WriteOptions) (*JobDispatchResponse, *WriteMeta, error) {
	return j.DispatchOpts(jobID, &DispatchOptions{Meta: meta, Payload: payload}, w)
}

// DispatchOpts is Dispatch with options.
func (j *Jobs) DispatchOpts(jobID string, opts *DispatchOptions, w *WriteOptions) (*JobDispatchResponse, *WriteMeta, error) {
	if opts == nil {
		opts = &DispatchOptions{}
	}
	req := &JobDispatchRequest{JobID: jobID, Payload: opts.Payload, Meta: opts.Meta, Priority: opts.Priority}
	var resp JobDispatchResponse
	wm, err := j.client.write(http.MethodPut, jobPath(jobID, "/dispatch"), req, &resp, w)
	if err != nil {
		return nil, nil, err
	}
	return &resp, wm, nil
}

// Next returns the first instant after from matching any of the block's
// expressions, read in its time zone (what `job status` shows as the next
// launch); the zero time when none matches.
func (p *PeriodicConfig) Next(from time.Time) (time.Time, error) {
	loc := time.UTC
	if p.TimeZone != nil && *p.TimeZone != "" {
		var err error
		if loc, err = time.LoadLocation(*p.TimeZone); err != nil {
			return time.Time{}, fmt.Errorf("time zone %q: %w", *p.TimeZone, err)
		}
	}
	specs := slices.Clone(p.Specs)
	if p.Spec != nil && *p.Spec != "" {
		specs = append(specs, *p.Spec)
	}
	var next time.Time
	for _, s := range specs {
		exp, err := parseCron(s)
		if err != nil {
			return time.Time{}, err
		}
		if t := exp.Next(from.In(loc)); !t.IsZero() && (next.IsZero() || t.Before(next)) {
			next = t
		}
	}
	return next, nil
}

// parseCron parses one expression, turning the library's panics on
// malformed input into errors.
func parseCron(spec string) (exp *cronexpr.Expression, err error) {
	defer func() {
		if recover() != nil {
			exp, err = nil, fmt.Errorf("cron %q: malformed expression", spec)
		}
	}()
	if exp, err = cronexpr.Parse(spec); err != nil {
		return nil, fmt.Errorf("cron %q: %w", spec, err)
	}
	return exp, nil
}
