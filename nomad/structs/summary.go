package structs

import "maps"

// JobSummary counts a job's allocations by client status, per group.
type JobSummary struct {
	JobID       string
	Namespace   string
	Summary     map[string]TaskGroupSummary
	Children    *JobChildrenSummary
	CreateIndex uint64
	ModifyIndex uint64
}

// Copy returns a deep copy.
func (s *JobSummary) Copy() *JobSummary {
	if s == nil {
		return nil
	}
	n := *s
	n.Summary = maps.Clone(s.Summary)
	if s.Children != nil {
		c := *s.Children
		n.Children = &c
	}
	return &n
}

// JobChildrenSummary counts the children of a parameterized or periodic job.
type JobChildrenSummary struct {
	Pending int64
	Running int64
	Dead    int64
}

// TaskGroupSummary counts a group's allocations. Unknown counts allocations
// on disconnected nodes: placed, possibly running, not terminal.
type TaskGroupSummary struct {
	Queued   int
	Complete int
	Failed   int
	Running  int
	Starting int
	Lost     int
	Unknown  int
}
