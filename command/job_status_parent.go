package command

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nomad-edge/nomad/api"
)

// parentHeader is the part of a job's basic information that says whether
// it is a template, and when a periodic one launches next.
func parentHeader(job *api.Job, now time.Time) []string {
	lines := []string{
		fmt.Sprintf("Periodic|%v", job.IsPeriodic()),
		fmt.Sprintf("Parameterized|%v", job.IsParameterized()),
	}
	p := job.Periodic
	stopped := job.Stop != nil && *job.Stop
	if p == nil || stopped || (p.Enabled != nil && !*p.Enabled) {
		return lines
	}
	if next, err := p.Next(now); err == nil && !next.IsZero() {
		lines = append(lines, fmt.Sprintf("Next Periodic Launch|%s (%s)", formatTime(next), prettyTimeDiff(next, now)))
	}
	return lines
}

// parentDetails prints what a periodic or parameterized job has instead
// of allocations: its parameters, the counts of its children by status,
// and the children themselves, newest first.
func (c *JobStatusCommand) parentDetails(client *api.Client, job *api.Job) int {
	id := *job.ID
	if pj := job.ParameterizedJob; pj != nil {
		c.Ui.Output("\nParameterized Job")
		c.Ui.Output(formatKV([]string{
			"Payload|" + pj.Payload,
			"Required Metadata|" + strings.Join(pj.MetaRequired, ", "),
			"Optional Metadata|" + strings.Join(pj.MetaOptional, ", "),
		}))
	}
	summary, _, err := client.Jobs().Summary(id, nil)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error querying job summary: %v", err))
		return exitError
	}
	title, listTitle := "Children Job Summary", "Previously Launched Jobs"
	if job.IsParameterized() {
		title, listTitle = "Parameterized Job Summary", "Dispatched Jobs"
	}
	ch := summary.Children
	if ch == nil {
		ch = &api.JobChildrenSummary{}
	}
	c.Ui.Output("\n" + title)
	c.Ui.Output(formatList([]string{"Pending|Running|Dead", fmt.Sprintf("%d|%d|%d", ch.Pending, ch.Running, ch.Dead)}))

	jobs, _, err := client.Jobs().List(&api.QueryOptions{Prefix: id + "/"})
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error querying child jobs: %v", err))
		return exitError
	}
	var children []*api.JobListStub
	for _, j := range jobs {
		if j.ParentID == id {
			children = append(children, j)
		}
	}
	c.Ui.Output("\n" + listTitle)
	if len(children) == 0 {
		c.Ui.Output(fmt.Sprintf("No %s", strings.ToLower(listTitle)))
		return exitOK
	}
	slices.SortStableFunc(children, func(a, b *api.JobListStub) int { return int(b.CreateIndex) - int(a.CreateIndex) })
	lines := []string{"ID|Status"}
	for _, j := range children {
		lines = append(lines, j.ID+"|"+jobStatus(j.Status, stopState(j.Stop)))
	}
	c.Ui.Output(formatList(lines))
	return exitOK
}
