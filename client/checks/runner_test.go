package checks

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/helper/clock/clocktest"
	"github.com/nomad-edge/nomad/nomad/structs"
	"github.com/nomad-edge/nomad/testutil/wait"
)

// onlyResult returns the runner's single result.
func onlyResult(t *testing.T, r *Runner) Result {
	t.Helper()
	res := r.Results()
	must.MapLen(t, 1, res)
	for _, v := range res {
		return v
	}
	return Result{}
}

func httpCheck(addr, path string) Check {
	return Check{
		Group: "web.web[0]", Service: "web", Address: addr,
		Spec: &structs.ServiceCheck{Name: "alive", Type: "http", Path: path, Interval: 10 * time.Second, Timeout: 2 * time.Second},
	}
}

// TestHTTP_PassingThenFailing checks an http check against a real server:
// 200 is success with upstream's output, then a 500 turns it to failure
// with the body as output, each new run on the injected clock's interval.
func TestHTTP_PassingThenFailing(t *testing.T) {
	var code atomic.Int32
	code.Store(200)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		must.EqOp(t, "/health", r.URL.Path)
		must.EqOp(t, "yes", r.Header.Get("X-Check"))
		w.WriteHeader(int(code.Load()))
		if code.Load() != 200 {
			fmt.Fprint(w, "broken")
		}
	}))
	defer srv.Close()

	clk := clocktest.NewManual(time.Unix(1_700_000_000, 0))
	r := New(Config{Clock: clk, AllocID: "a1"})
	defer r.Stop()
	c := httpCheck(strings.TrimPrefix(srv.URL, "http://"), "/health")
	c.Spec.Header = map[string][]string{"X-Check": {"yes"}}
	r.Set([]Check{c})

	wait.Poll(t, 5*time.Second, "first http result", func() (bool, string) {
		res := onlyResult(t, r)
		return res.Status == ResultSuccess, fmt.Sprintf("%+v", res)
	})
	res := onlyResult(t, r)
	must.EqOp(t, "nomad: http ok", res.Output)
	must.EqOp(t, 200, res.StatusCode)
	must.EqOp(t, ModeHealthiness, res.Mode)
	must.EqOp(t, int64(1_700_000_000), res.Timestamp)
	must.EqOp(t, ID("a1", c), res.ID)

	code.Store(500)
	wait.Poll(t, 5*time.Second, "a timer armed for the next run", func() (bool, string) {
		return clk.Pending() == 1, fmt.Sprint(clk.Pending())
	})
	clk.Advance(10 * time.Second)
	wait.Poll(t, 5*time.Second, "http check failing", func() (bool, string) {
		res := onlyResult(t, r)
		return res.Status == ResultFailure, fmt.Sprintf("%+v", res)
	})
	res = onlyResult(t, r)
	must.EqOp(t, 500, res.StatusCode)
	must.EqOp(t, "broken", res.Output)
	ok, _ := r.Passing()
	must.False(t, ok)
}

// TestHTTP_StatusClasses checks upstream's mapping of answers: 2xx
// passing, 429 warning, a redirect (not followed) or an error critical.
func TestHTTP_StatusClasses(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/204":
			w.WriteHeader(204)
		case "/429":
			w.WriteHeader(429)
		case "/302":
			http.Redirect(w, r, "/204", http.StatusFound)
		default:
			w.WriteHeader(404)
		}
	}))
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	for path, want := range map[string]string{
		"/204": structs.CheckStatusPassing, "/429": structs.CheckStatusWarning,
		"/302": structs.CheckStatusCritical, "/404": structs.CheckStatusCritical,
	} {
		out := probeHTTP(context.Background(), &structs.ServiceCheck{Path: path}, addr)
		must.EqOp(t, want, out.status, must.Sprint(path))
	}
}

// TestHTTP_HTTPSSkipVerify checks protocol "https": a self-signed server
// fails verification unless tls_skip_verify is set.
func TestHTTP_HTTPSSkipVerify(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "https://")
	out := probeHTTP(context.Background(), &structs.ServiceCheck{Path: "/", Protocol: "https"}, addr)
	must.EqOp(t, structs.CheckStatusCritical, out.status)
	out = probeHTTP(context.Background(), &structs.ServiceCheck{Path: "/", Protocol: "https", TLSSkipVerify: true}, addr)
	must.EqOp(t, structs.CheckStatusPassing, out.status, must.Sprint(out.output))
}

// TestTCP_ConnectsOrFails checks a tcp check: a listening port passes,
// a closed one fails with the dial error as output.
func TestTCP_ConnectsOrFails(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	must.NoError(t, err)
	addr := l.Addr().String()
	out := probeTCP(context.Background(), addr)
	must.EqOp(t, structs.CheckStatusPassing, out.status)
	must.EqOp(t, "nomad: tcp ok", out.output)
	l.Close()
	out = probeTCP(context.Background(), addr)
	must.EqOp(t, structs.CheckStatusCritical, out.status)
	must.StrContains(t, out.output, "refused")
}

// scripted is an ExecFunc whose exit code the test sets.
type scripted struct {
	mu    sync.Mutex
	code  int
	calls int
}

func (s *scripted) set(code int) { s.mu.Lock(); s.code = code; s.mu.Unlock() }

func (s *scripted) exec(ctx context.Context, cmd string, args []string) ([]byte, int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	return []byte(cmd + " " + strings.Join(args, " ")), s.code, nil
}

func scriptCheck(s *scripted, spec structs.ServiceCheck) Check {
	spec.Type, spec.Command, spec.Args = "script", "/bin/check", []string{"-q"}
	if spec.Interval == 0 {
		spec.Interval = 5 * time.Second
	}
	spec.Timeout = time.Second
	return Check{Group: "g", Task: "t", Service: "s", Spec: &spec, Exec: s.exec}
}

// TestScript_ThresholdsAndInitialStatus checks initial_status before the
// first result, and that success_before_passing and
// failures_before_critical hold the status until enough results agree.
func TestScript_ThresholdsAndInitialStatus(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &scripted{code: 2}
		r := New(Config{AllocID: "a"})
		defer r.Stop()
		c := scriptCheck(s, structs.ServiceCheck{Name: "c", InitialStatus: "warning", SuccessBeforePassing: 2, FailuresBeforeCritical: 3})
		r.Set([]Check{c})
		synctest.Wait()
		must.EqOp(t, ResultWarning, onlyResult(t, r).Status) // 1 failure of 3
		must.EqOp(t, "/bin/check -q", onlyResult(t, r).Output)
		time.Sleep(10 * time.Second)
		synctest.Wait()
		must.EqOp(t, ResultFailure, onlyResult(t, r).Status) // 3 failures
		s.set(0)
		time.Sleep(5 * time.Second)
		synctest.Wait()
		must.EqOp(t, ResultFailure, onlyResult(t, r).Status) // 1 success of 2
		time.Sleep(5 * time.Second)
		synctest.Wait()
		must.EqOp(t, ResultSuccess, onlyResult(t, r).Status)
		s.set(1)
		time.Sleep(15 * time.Second)
		synctest.Wait()
		must.EqOp(t, ResultWarning, onlyResult(t, r).Status) // exit 1 is a warning
	})
}

// TestPassing_OnUpdate checks what judges a deployment: an "ignore" check
// never does (and is a readiness check), "ignore_warnings" passes with a
// warning, and the time returned is the latest change.
func TestPassing_OnUpdate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		warn, bad := &scripted{code: 1}, &scripted{code: 2}
		r := New(Config{AllocID: "a"})
		defer r.Stop()
		ok, _ := r.Passing()
		must.True(t, ok)
		start := time.Now()
		r.Set([]Check{
			scriptCheck(warn, structs.ServiceCheck{Name: "warn", OnUpdate: structs.OnUpdateIgnoreWarn}),
			scriptCheck(bad, structs.ServiceCheck{Name: "bad", OnUpdate: structs.OnUpdateIgnore}),
		})
		synctest.Wait()
		ok, since := r.Passing()
		must.True(t, ok)
		must.Eq(t, start, since)
		for _, res := range r.Results() {
			if res.Check == "bad" {
				must.EqOp(t, ModeReadiness, res.Mode)
			}
		}
	})
}

// TestCheckRestart_LimitAfterGrace checks check_restart: failures within
// grace of the task's start do not count, then limit failures in a row
// restart the task once with upstream's reason, and the count starts
// again.
func TestCheckRestart_LimitAfterGrace(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &scripted{code: 2}
		started := time.Now()
		var mu sync.Mutex
		var reasons []string
		c := scriptCheck(s, structs.ServiceCheck{Name: "alive", CheckRestart: &structs.CheckRestart{Limit: 3, Grace: 12 * time.Second}})
		c.TaskStarted = func() time.Time { return started }
		c.Restart = func(reason string) { mu.Lock(); reasons = append(reasons, reason); mu.Unlock() }
		r := New(Config{AllocID: "a"})
		defer r.Stop()
		r.Set([]Check{c})
		// Runs at 0, 5 and 10 s are in grace; 15, 20, 25 s count.
		time.Sleep(20 * time.Second)
		synctest.Wait()
		mu.Lock()
		must.SliceEmpty(t, reasons)
		mu.Unlock()
		time.Sleep(5 * time.Second)
		synctest.Wait()
		mu.Lock()
		must.Eq(t, []string{`healthcheck: check "alive" unhealthy`}, reasons)
		mu.Unlock()
		// A passing result resets the count.
		time.Sleep(10 * time.Second) // 30, 35: two failures
		synctest.Wait()
		s.set(0)
		time.Sleep(5 * time.Second) // 40: success
		synctest.Wait()
		s.set(2)
		time.Sleep(10 * time.Second) // 45, 50: two failures
		synctest.Wait()
		mu.Lock()
		must.SliceLen(t, 1, reasons)
		mu.Unlock()
	})
}

// TestSet_KeepsRemovesStops checks that Set keeps a check's state across
// an update that keeps it, restarts a changed one, stops removed checks' goroutines, and that
// Stop ends every goroutine (synctest fails on a leaked one).
func TestSet_KeepsRemovesStops(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a, b := &scripted{}, &scripted{}
		r := New(Config{AllocID: "x"})
		ca := scriptCheck(a, structs.ServiceCheck{Name: "a"})
		cb := scriptCheck(b, structs.ServiceCheck{Name: "b"})
		r.Set([]Check{ca, cb})
		synctest.Wait()
		r.Set([]Check{ca})
		time.Sleep(5 * time.Second)
		synctest.Wait()
		must.EqOp(t, 2, a.calls) // kept: its second run on the interval
		must.EqOp(t, 1, b.calls) // removed after its first
		must.EqOp(t, 1, r.Len())
		changed := ca
		changed.Spec = ca.Spec.Copy()
		changed.Spec.Timeout = 2 * time.Second
		r.Set([]Check{changed})
		synctest.Wait()
		must.EqOp(t, 3, a.calls) // changed: started afresh, a run at once
		r.Stop()
		r.Set([]Check{cb})
		must.EqOp(t, 0, r.Len())
	})
}
