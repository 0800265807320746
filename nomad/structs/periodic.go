package structs

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/cronexpr"
)

// PeriodicSpecCron is the only spec type upstream knows: cron expressions.
const PeriodicSpecCron = "cron"

// Child job ID infixes, as upstream: `<parent>/periodic-<unix seconds>` and
// `<parent>/dispatch-<unix seconds>-<8 hex>`.
const (
	PeriodicLaunchSuffix = "/periodic-"
	DispatchLaunchSuffix = "/dispatch-"
)

// PeriodicConfig is a job's `periodic` block: the job is a template, and
// the leader launches a child job from it at each cron instant.
type PeriodicConfig struct {
	Enabled bool
	// Spec is the legacy single expression (`cron`); Specs is `crons`.
	Spec     string
	Specs    []string
	SpecType string
	// ProhibitOverlap skips a launch while an earlier child still runs.
	ProhibitOverlap bool
	// TimeZone is an IANA name the expressions are read in; "" is UTC.
	TimeZone string
}

// Copy returns a deep copy.
func (p *PeriodicConfig) Copy() *PeriodicConfig {
	if p == nil {
		return nil
	}
	c := *p
	c.Specs = slices.Clone(p.Specs)
	return &c
}

// Canonicalize fills upstream's defaults.
func (p *PeriodicConfig) Canonicalize() {
	if p == nil {
		return
	}
	if p.SpecType == "" {
		p.SpecType = PeriodicSpecCron
	}
	if p.TimeZone == "" {
		p.TimeZone = "UTC"
	}
}

// expressions returns every cron expression of the block, the legacy one
// first.
func (p *PeriodicConfig) expressions() []string {
	var out []string
	if p.Spec != "" {
		out = append(out, p.Spec)
	}
	return append(out, p.Specs...)
}

// validate checks the block; every bad expression is named with its field.
func (p *PeriodicConfig) validate() problems {
	var ps problems
	if p == nil {
		return ps
	}
	if p.SpecType != "" && p.SpecType != PeriodicSpecCron {
		ps.add("periodic: unknown spec type %q (only %q is supported)", p.SpecType, PeriodicSpecCron)
	}
	switch {
	case p.Spec != "" && len(p.Specs) > 0:
		ps.add("periodic: set either cron or crons, not both")
	case p.Spec == "" && len(p.Specs) == 0:
		ps.add("periodic: missing cron expression: set crons = [\"...\"]")
	}
	if p.Spec != "" {
		if _, err := parseCron(p.Spec); err != nil {
			ps.add("periodic: cron %q is invalid: %v", p.Spec, err)
		}
	}
	for i, s := range p.Specs {
		if _, err := parseCron(s); err != nil {
			ps.add("periodic: crons[%d] %q is invalid: %v", i, s, err)
		}
	}
	if _, err := p.Location(); err != nil {
		ps.add("periodic: time_zone %q is invalid: %v", p.TimeZone, err)
	}
	return ps
}

// Location loads the block's time zone.
func (p *PeriodicConfig) Location() (*time.Location, error) {
	if p == nil || p.TimeZone == "" {
		return time.UTC, nil
	}
	return time.LoadLocation(p.TimeZone)
}

// Next returns the first instant after from matching any expression, read
// in the block's time zone; the zero time when none will ever match (a
// date in the past) or the block is invalid. Across daylight saving
// changes it follows the wall clock: a time that does not exist that day
// (clocks spring forward over it) is skipped, as upstream; a time that
// happens twice (clocks fall back, by an hour or by half an hour) matches
// once, where upstream matches both.
func (p *PeriodicConfig) Next(from time.Time) (time.Time, error) {
	loc, err := p.Location()
	if err != nil {
		return time.Time{}, err
	}
	from = from.In(loc)
	var next time.Time
	for _, s := range p.expressions() {
		exp, err := parseCron(s)
		if err != nil {
			return time.Time{}, fmt.Errorf("cron %q: %w", s, err)
		}
		t := exp.Next(from)
		// A candidate whose wall clock does not read later than from's
		// lies in the time repeated when clocks fall back (an hour, or
		// half an hour on Lord Howe): that wall-clock instant already
		// passed at its first occurrence. The repeat is bounded, so is
		// the skip.
		for range maxRepeatedInstants {
			if !wallNotAfter(t, from) {
				break
			}
			t = exp.Next(t)
		}
		if !t.IsZero() && (next.IsZero() || t.Before(next)) {
			next = t
		}
	}
	return next, nil
}

// maxRepeatedInstants bounds the instants skipped in one fall-back's
// repeated time: a schedule of every second over the longest repeat (an
// hour) stays under it.
const maxRepeatedInstants = 3601

// wallNotAfter reports whether a's wall clock (in its location) reads no
// later than b's, to the second.
func wallNotAfter(a, b time.Time) bool {
	if a.IsZero() || b.IsZero() {
		return false
	}
	return !wallClock(a).After(wallClock(b))
}

// wallClock is t's wall-clock reading as a time in UTC, for comparing
// readings whatever the offsets.
func wallClock(t time.Time) time.Time {
	y, mo, d := t.Date()
	h, mi, s := t.Clock()
	return time.Date(y, mo, d, h, mi, s, 0, time.UTC)
}

// parseCron parses one expression. The library panics on some malformed
// input, which must be a validation error, never a crashed server.
func parseCron(spec string) (exp *cronexpr.Expression, err error) {
	defer func() {
		if r := recover(); r != nil {
			exp, err = nil, fmt.Errorf("malformed expression")
		}
	}()
	if strings.TrimSpace(spec) == "" {
		return nil, fmt.Errorf("empty expression")
	}
	return cronexpr.Parse(spec)
}

// Parameterized payload requirements.
const (
	DispatchPayloadOptional  = "optional"
	DispatchPayloadRequired  = "required"
	DispatchPayloadForbidden = "forbidden"

	// DispatchPayloadSizeLimit is upstream's bound on a dispatch payload:
	// it travels in the job through raft and to the client.
	DispatchPayloadSizeLimit = 16 * 1024
)

// ParameterizedJobConfig is a job's `parameterized` block: the job never
// runs itself; `job dispatch` launches a child with a payload and meta.
type ParameterizedJobConfig struct {
	Payload      string
	MetaRequired []string
	MetaOptional []string
}

// Copy returns a deep copy.
func (c *ParameterizedJobConfig) Copy() *ParameterizedJobConfig {
	if c == nil {
		return nil
	}
	n := *c
	n.MetaRequired = slices.Clone(c.MetaRequired)
	n.MetaOptional = slices.Clone(c.MetaOptional)
	return &n
}

// Canonicalize fills upstream's default (payload optional).
func (c *ParameterizedJobConfig) Canonicalize() {
	if c != nil && c.Payload == "" {
		c.Payload = DispatchPayloadOptional
	}
}

func (c *ParameterizedJobConfig) validate() problems {
	var p problems
	if c == nil {
		return p
	}
	switch c.Payload {
	case "", DispatchPayloadOptional, DispatchPayloadRequired, DispatchPayloadForbidden:
	default:
		p.add("parameterized: payload must be one of %q, %q, %q (got %q)",
			DispatchPayloadOptional, DispatchPayloadRequired, DispatchPayloadForbidden, c.Payload)
	}
	for _, k := range c.MetaRequired {
		if slices.Contains(c.MetaOptional, k) {
			p.add("parameterized: meta key %q is both required and optional", k)
		}
	}
	return p
}

// DispatchPayloadConfig is a task's `dispatch_payload` block: where in the
// task's local/ directory the client writes a dispatched job's payload.
type DispatchPayloadConfig struct {
	File string
}

// Copy returns a copy.
func (d *DispatchPayloadConfig) Copy() *DispatchPayloadConfig { return copyPtr(d) }

func (d *DispatchPayloadConfig) validate() problems {
	var p problems
	if d == nil {
		return p
	}
	if d.File == "" {
		p.add("dispatch_payload: missing file")
	} else if !localPath(d.File) {
		p.add("dispatch_payload: file %q must be a relative path inside the task's local/ directory", d.File)
	}
	return p
}

// localPath reports whether a relative path stays below its directory.
func localPath(p string) bool {
	if strings.HasPrefix(p, "/") || strings.Contains(p, "\x00") {
		return false
	}
	depth := 0
	for _, part := range strings.Split(p, "/") {
		switch part {
		case "", ".":
		case "..":
			depth--
			if depth < 0 {
				return false
			}
		default:
			depth++
		}
	}
	return depth > 0
}

// IsPeriodic reports whether the job is a periodic template.
func (j *Job) IsPeriodic() bool { return j != nil && j.Periodic != nil }

// IsPeriodicActive reports whether the leader should launch the job.
func (j *Job) IsPeriodicActive() bool {
	return j.IsPeriodic() && j.Periodic.Enabled && !j.Stop && !j.IsParameterized()
}

// IsParameterized reports whether the job is a parameterized template (a
// dispatched child carries the block too, but runs).
func (j *Job) IsParameterized() bool { return j != nil && j.ParameterizedJob != nil && !j.Dispatched }

// IsParent reports whether the job is a template that never gets
// allocations of its own: periodic or parameterized.
func (j *Job) IsParent() bool { return j.IsPeriodic() || j.IsParameterized() }

// validateParent checks the periodic and parameterized blocks against the
// job's type.
func (j *Job) validateParent() problems {
	var p problems
	if j.Periodic != nil {
		if j.Type != JobTypeBatch && j.Type != JobTypeSysBatch {
			p.add("Periodic can only be used with %q or %q scheduler (job type is %q)", JobTypeBatch, JobTypeSysBatch, j.Type)
		}
		p = append(p, j.Periodic.validate()...)
	}
	if j.ParameterizedJob != nil {
		if j.Type != JobTypeBatch && j.Type != JobTypeSysBatch {
			p.add("Parameterized job can only be used with %q or %q scheduler (job type is %q)", JobTypeBatch, JobTypeSysBatch, j.Type)
		}
		p = append(p, j.ParameterizedJob.validate()...)
	}
	if len(j.Payload) > DispatchPayloadSizeLimit {
		p.add("Payload of %d bytes exceeds the limit of %d bytes", len(j.Payload), DispatchPayloadSizeLimit)
	}
	return p
}

// PeriodicChild returns the job the leader launches at launch: a copy of j
// without the periodic block, named after the launch's unix second.
func (j *Job) PeriodicChild(launch time.Time) *Job {
	c := j.childCopy()
	c.ID = fmt.Sprintf("%s%s%d", j.ID, PeriodicLaunchSuffix, launch.Unix())
	c.Name = c.ID
	c.Periodic = nil
	return c
}

// DispatchChild returns the child a dispatch creates: a copy of j marked
// dispatched, with the payload and j's meta overlaid with meta.
func (j *Job) DispatchChild(id string, payload []byte, meta map[string]string) *Job {
	c := j.childCopy()
	c.ID = id
	c.Name = id
	c.Dispatched = true
	c.Payload = slices.Clone(payload)
	if len(meta) > 0 {
		if c.Meta == nil {
			c.Meta = map[string]string{}
		}
		for k, v := range meta {
			c.Meta[k] = v
		}
	}
	return c
}

func (j *Job) childCopy() *Job {
	c := j.Copy()
	c.ParentID = j.ID
	c.Status, c.StatusDescription = "", ""
	c.Stable = false
	c.Version = 0
	c.CreateIndex, c.ModifyIndex, c.JobModifyIndex = 0, 0, 0
	return c
}

// LaunchTimeFromChildID parses the launch instant out of a periodic child's
// ID; ok is false for any other ID.
func LaunchTimeFromChildID(parentID, childID string) (t time.Time, ok bool) {
	rest, found := strings.CutPrefix(childID, parentID+PeriodicLaunchSuffix)
	if !found || rest == "" {
		return time.Time{}, false
	}
	var sec int64
	if _, err := fmt.Sscanf(rest, "%d", &sec); err != nil || fmt.Sprint(sec) != rest {
		return time.Time{}, false
	}
	return time.Unix(sec, 0), true
}
