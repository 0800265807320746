package nomad

import (
	"context"
	"errors"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/nomad/mock"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// A blocking query ends when its caller's context does, not after its
// MaxQueryTime: an HTTP client that hung up must not pin a goroutine and a
// watch set on the server for minutes.
func TestBlockingQuery_EndsWithCallerContext(t *testing.T) {
	s := testServer(t, nil)
	var first structs.JobListResponse
	must.NoError(t, s.RPC("Job.List", &structs.JobListRequest{}, &first))

	ctx, cancel := context.WithCancel(context.Background())
	// An empty jobs table answers index 0, which would not block.
	req := &structs.JobListRequest{QueryOptions: structs.QueryOptions{MinQueryIndex: max(first.Index, 1), MaxQueryTime: time.Hour}}
	req.SetContext(ctx)
	done := make(chan error, 1)
	go func() {
		var resp structs.JobListResponse
		done <- s.RPC("Job.List", req, &resp)
	}()
	select {
	case err := <-done:
		t.Fatalf("returned before the caller went away: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	cancel()
	select {
	case err := <-done:
		must.NoError(t, err, must.Sprint("a canceled blocking query answers with what it has"))
	case <-time.After(5 * time.Second):
		t.Fatal("the blocking query outlived its caller")
	}
}

// The context a request carries is never encoded: it stays in the process
// that made it, and the far side sets its own.
func TestRequestContext_NotEncoded(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	req := &structs.JobListRequest{}
	req.SetContext(ctx)
	buf, err := structs.Encode(structs.EvalUpdateRequestType, req)
	must.NoError(t, err)
	var got structs.JobListRequest
	must.NoError(t, structs.Decode(buf[1:], &got))
	must.NoError(t, got.Context().Err(), must.Sprint("the decoded request has its own, live context"))
}

// A job with `null` where a group or task belongs, as a stranger can send
// over RPC, is refused as invalid, naming the holes; it never reaches the
// code that fills in defaults (which would dereference them).
func TestJobRegister_NullEntriesRefused(t *testing.T) {
	s := testServer(t, nil)
	job := mock.Job()
	job.TaskGroups = append(job.TaskGroups, nil)
	job.TaskGroups[0].Tasks = append(job.TaskGroups[0].Tasks, nil)
	var resp structs.JobRegisterResponse
	err := s.RPC("Job.Register", &structs.JobRegisterRequest{Job: job}, &resp)
	must.ErrorIs(t, err, structs.ErrInvalidRequest)
	must.ErrorContains(t, err, "Job.TaskGroups[1] is null")
	must.ErrorContains(t, err, "Job.TaskGroups[0].Tasks[1] is null")
}

// An Eval.Dequeue whose caller went away (a worker on a server that stopped
// while it long-polled) takes no evaluation: one that arrives after the
// caller left, or is ready as it leaves, stays with the broker for the next
// worker instead of sitting outstanding, delivered to nobody, for the
// minute of the nack timeout.
func TestEvalDequeue_CallerGone(t *testing.T) {
	s := testServer(t, func(c *Config) { c.NumSchedulers = 0 })
	dequeue := func(ctx context.Context, timeout time.Duration) (*structs.EvalDequeueResponse, error) {
		req := &structs.EvalDequeueRequest{Schedulers: []string{structs.JobTypeService}, Timeout: timeout}
		req.SetContext(ctx)
		var resp structs.EvalDequeueResponse
		return &resp, s.RPC("Eval.Dequeue", req, &resp)
	}

	// Gone while it waits.
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		resp, err := dequeue(ctx, time.Hour)
		if err == nil && resp.Eval != nil {
			err = errors.New("the departed caller took " + resp.Eval.ID)
		}
		done <- err
	}()
	cancel()
	select {
	case err := <-done:
		must.ErrorIs(t, err, context.Canceled)
	case <-time.After(5 * time.Second):
		t.Fatal("the dequeue outlived its caller")
	}
	first := evalFor("web", 50, 1)
	s.evalBroker.Enqueue(first)
	resp, err := dequeue(context.Background(), time.Second)
	must.NoError(t, err)
	must.NotNil(t, resp.Eval)
	must.Eq(t, first.ID, resp.Eval.ID)
	must.NoError(t, s.evalBroker.Ack(first.ID, resp.Token))

	// Gone as an evaluation is ready: given back.
	second := evalFor("api", 50, 2)
	s.evalBroker.Enqueue(second)
	_, err = dequeue(ctx, time.Second)
	must.ErrorIs(t, err, context.Canceled)
	_, outstanding := s.evalBroker.Outstanding(second.ID)
	must.False(t, outstanding)
	resp, err = dequeue(context.Background(), time.Second)
	must.NoError(t, err)
	must.NotNil(t, resp.Eval)
	must.Eq(t, second.ID, resp.Eval.ID)
}

// Calls waiting out an election sleep until raft reports a change of
// leader: they do not poll. The servers of a 10,000-node fleet, whose
// thousands of calls to forward each woke every 20 ms in an election,
// spent on those wakes the CPU raft needed to elect, and went without a
// leader for minutes.
func TestLeaderForCall_WaitsWithoutPolling(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Logger = hclog.NewNullLogger()
	cfg.NodeName = t.Name()
	cfg.DataDir = t.TempDir()
	cfg.BootstrapExpect = 2 // alone, it never elects
	cfg.RPCAddr = &net.TCPAddr{IP: net.ParseIP("127.0.0.1")}
	cfg.SerfAddr = &net.TCPAddr{IP: net.ParseIP("127.0.0.1")}
	s, err := NewServer(cfg)
	must.NoError(t, err)
	t.Cleanup(func() { _ = s.Shutdown() })

	const waiters = 2000
	ctx, cancel := context.WithCancel(context.Background())
	errs := make(chan error, waiters)
	for range waiters {
		go func() {
			_, err := s.leaderForCall(ctx)
			errs <- err
		}()
	}
	// The measurement window: the waiters' CPU over half a second, the
	// server's own quiet background included. Polling every 20 ms, 2,000
	// waiters spent 0.1-0.3 s of CPU in it.
	<-time.After(100 * time.Millisecond)
	before := processCPU()
	<-time.After(500 * time.Millisecond)
	spent := processCPU() - before
	cancel()
	for range waiters {
		select {
		case err := <-errs:
			must.ErrorIs(t, err, context.Canceled)
		case <-time.After(10 * time.Second):
			t.Fatal("a waiter outlived its caller's context")
		}
	}
	must.Less(t, 40*time.Millisecond, spent, must.Sprintf("%d waiters for a leader spent %v of CPU in 0.5 s", waiters, spent))
}

// A call made while a server is still taking up its first leadership
// waits for it and is served there, woken when the duties are up (after
// raft's observation, which finds them not yet started).
func TestLeaderForCall_WokenWhenLeadershipIsTakenUp(t *testing.T) {
	cfg := DefaultConfig()
	cfg.DevMode = true
	cfg.Logger = hclog.NewNullLogger()
	cfg.NodeName = t.Name()
	cfg.RPCAddr = &net.TCPAddr{IP: net.ParseIP("127.0.0.1")}
	s, err := NewServer(cfg)
	must.NoError(t, err)
	t.Cleanup(func() { _ = s.Shutdown() })
	start := time.Now()
	leader, err := s.leaderForCall(context.Background())
	must.NoError(t, err)
	must.Eq(t, "", leader, must.Sprint("this server leads and serves the call"))
	must.True(t, s.IsLeader())
	must.Less(t, rpcHoldTimeout/2, time.Since(start), must.Sprint("woken when leadership was taken up, not by the hold's end"))
}

// processCPU is the CPU this process has used, user and system.
func processCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
