package client

import (
	"fmt"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/testutil/fault"

	"github.com/nomad-edge/nomad/nomad/structs"
)

// An outage is logged when it starts and then at doubling ages, never more
// than outageLogMax apart: a client retrying every second through an
// hour-long outage writes about fifteen lines, and an operator still sees
// within five minutes that it is going on.
func TestOutage_LogsAtDoublingAges(t *testing.T) {
	start := time.Unix(0, 0)
	var o outage
	var logged []time.Duration
	for age := time.Duration(0); age <= time.Hour; age += time.Second {
		if o.failed(start.Add(age)) {
			logged = append(logged, age)
		}
	}
	must.Eq(t, []time.Duration{0, time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second}, logged[:5])
	for i := 1; i < len(logged); i++ {
		must.LessEq(t, outageLogMax, logged[i]-logged[i-1])
	}
	must.Between(t, 10, len(logged), 25)
	must.Eq(t, time.Hour, o.ended(start.Add(time.Hour)))
	must.Eq(t, time.Duration(0), o.ended(start.Add(time.Hour)), must.Sprint("no outage after a success"))
}

// Only a server's refusal backs off; a link that fails, or servers without
// a leader, are retried after about a second counted from the start of the
// failed attempt.
func TestRetrier_FlatWhileUnreachable(t *testing.T) {
	r := newRetrier(time.Second, time.Minute)
	for i := range 50 {
		d := r.next(fault.ErrPartitioned, 0)
		must.Between(t, 750*time.Millisecond, d, 1250*time.Millisecond, must.Sprintf("attempt %d", i))
		must.Between(t, 0, r.next(fmt.Errorf("rpc: %w", structs.ErrNotLeader), 500*time.Millisecond), 750*time.Millisecond)
	}
	must.Eq(t, time.Duration(0), r.next(fault.ErrPartitioned, 2*time.Second), must.Sprint("after a timeout, at once"))
	for range 10 {
		r.next(structs.ErrPermissionDenied, 0)
	}
	must.Between(t, 30*time.Second, r.next(structs.ErrPermissionDenied, 0), time.Minute)
}
