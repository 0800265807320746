package scheduler

import (
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/nomad/mock"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// A job update replaces a failed allocation whose attempts are used up (the
// operator's way past the policy), but leaves one that this evaluation tags
// for an alloc-failure follow-up to that follow-up: tagging and stopping
// one allocation in one plan would write it twice.
func TestReconcile_JobUpdateAndFailedAllocations(t *testing.T) {
	job := mock.Job()
	job.TaskGroups[0].Count = 2
	job.TaskGroups[0].ReschedulePolicy = &structs.ReschedulePolicy{Attempts: 1, Interval: time.Hour, Delay: time.Minute, DelayFunction: structs.DelayFunctionConstant}
	allocs := allocsFor(job, 2, structs.AllocClientStatusRunning)
	usedUp, waiting := allocs[0], allocs[1]
	failedAt(usedUp, testNow.Add(-time.Second))
	usedUp.RescheduleTracker = &structs.RescheduleTracker{Events: []*structs.RescheduleEvent{{RescheduleTime: testNow.Add(-time.Minute).UnixNano()}}}
	failedAt(waiting, testNow.Add(-time.Second))

	newer := job.Copy()
	newer.Version++
	newer.JobModifyIndex++
	newer.TaskGroups[0].Meta = map[string]string{"rev": "2"}
	r := reconcileChecked(t, ReconcilerInput{Job: newer, Allocs: allocs, Now: testNow})

	must.Len(t, 1, r.DestructiveUpdate)
	must.Eq(t, usedUp.ID, r.DestructiveUpdate[0].previousAlloc.ID)
	must.MapContainsKey(t, r.AttributeUpdates, waiting.ID)
	must.NotEq(t, "", r.AttributeUpdates[waiting.ID].FollowupEvalID)
}
