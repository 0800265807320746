package agent

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/testutil/wait"
)

// limitedServer serves the API with limits on loopback; /v1/jobs/parse
// needs no agent or RPC behind it.
func limitedServer(t *testing.T, limits bodyLimits) *httptest.Server {
	t.Helper()
	s := &HTTPServer{logger: hclog.NewNullLogger(), limits: limits}
	srv := httptest.NewServer(s.routes())
	t.Cleanup(srv.Close)
	return srv
}

// parseBody is a /v1/jobs/parse body of about size bytes.
func parseBody(t *testing.T, size int) string {
	t.Helper()
	hcl := "job \"j\" {\n  group \"g\" {\n    task \"t\" {\n      driver = \"mock_driver\"\n    }\n  }\n}\n"
	hcl += "# " + strings.Repeat("x", max(0, size-len(hcl)-40)) + "\n"
	b, err := json.Marshal(map[string]any{"JobHCL": hcl})
	must.NoError(t, err)
	return string(b)
}

// The budget hands out bytes in arrival order, never more than its size,
// and a waiter that gives up takes nothing.
func TestByteBudget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newByteBudget(10)
		must.NoError(t, b.acquire(t.Context(), 6))

		var order []int64
		var mu sync.Mutex
		got := func(n int64) {
			must.NoError(t, b.acquire(t.Context(), n))
			mu.Lock()
			order = append(order, n)
			mu.Unlock()
		}
		go got(8) // first in line
		synctest.Wait()
		go got(2) // fits now, but must not overtake the 8
		synctest.Wait()
		mu.Lock()
		must.SliceEmpty(t, order)
		mu.Unlock()

		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		must.ErrorIs(t, b.acquire(ctx, 10), context.DeadlineExceeded)

		b.release(6)
		synctest.Wait()
		must.SliceContainsAll(t, []int64{8, 2}, order)
		now, peak := b.usage()
		must.Eq(t, 10, now)
		must.Eq(t, 10, peak)
	})
}

// 150 concurrent bodies of 1 MiB against a 4 MiB budget: every request
// is answered, the agent never holds more than the budget, and all of it
// is free again afterwards. (Issue 5's 150 bodies of 15 MiB, scaled down
// with the budget so the test stays small.)
func TestHTTP_ConcurrentBodiesStayWithinBudget(t *testing.T) {
	// The wait is generous: under the race detector parsing a 1 MiB job
	// file takes long, and a request must wait its turn, not give up.
	limits := bodyLimits{budget: newByteBudget(4 << 20), wait: 10 * time.Minute, readTimeout: 10 * time.Minute}
	srv := limitedServer(t, limits)
	body := parseBody(t, 1<<20)

	var wg sync.WaitGroup
	codes := make(chan int, 150)
	for range 150 {
		wg.Go(func() {
			resp, err := http.Post(srv.URL+"/v1/jobs/parse", "application/json", strings.NewReader(body))
			if err != nil {
				codes <- -1
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			codes <- resp.StatusCode
		})
	}
	wg.Wait()
	close(codes)
	for c := range codes {
		must.Eq(t, http.StatusOK, c)
	}
	now, peak := limits.budget.usage()
	must.Eq(t, 0, now)
	must.LessEq(t, 4<<20, peak)
	must.Greater(t, 1<<20, peak, must.Sprint("bodies ran concurrently"))
}

// halfSent opens a connection that declares a body of size bytes and
// sends only the start of it, as a slow or hostile client does.
func halfSent(t *testing.T, addr string, size int) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	must.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	_, err = fmt.Fprintf(c, "POST /v1/jobs/parse HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n{\"JobHCL\": \"", size)
	must.NoError(t, err)
	return c
}

// waitUsage polls the budget until it holds want bytes; the clients are
// real connections, so there is no event to wait on.
func waitUsage(t *testing.T, b *byteBudget, want int64) {
	t.Helper()
	wait.Poll(t, 10*time.Second, fmt.Sprintf("the budget to hold %d bytes", want), func() (bool, string) {
		now, _ := b.usage()
		return now == want, fmt.Sprintf("%d bytes", now)
	})
}

// Half-sent bodies hold their share of the budget only until the body
// read timeout: meanwhile other requests wait a bounded time and get a
// 503 that says why, the slow clients get a 408 and lose their
// connection, and then requests go through again.
func TestHTTP_HalfSentBodiesAreCutOff(t *testing.T) {
	limits := bodyLimits{budget: newByteBudget(2 << 20), wait: 50 * time.Millisecond, readTimeout: 500 * time.Millisecond}
	srv := limitedServer(t, limits)
	addr := strings.TrimPrefix(srv.URL, "http://")
	slow := []net.Conn{halfSent(t, addr, 1<<20), halfSent(t, addr, 1<<20)}
	waitUsage(t, limits.budget, 2<<20)

	resp, err := http.Post(srv.URL+"/v1/jobs/parse", "application/json", strings.NewReader(parseBody(t, 1000)))
	must.NoError(t, err)
	msg, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	must.Eq(t, http.StatusServiceUnavailable, resp.StatusCode)
	must.StrContains(t, string(msg), "Too many request bodies in flight")
	must.Eq(t, "5", resp.Header.Get("Retry-After"))

	for _, c := range slow {
		must.NoError(t, c.SetReadDeadline(time.Now().Add(10*time.Second)))
		r := bufio.NewReader(c)
		got, err := http.ReadResponse(r, nil)
		must.NoError(t, err)
		body, _ := io.ReadAll(got.Body)
		must.Eq(t, http.StatusRequestTimeout, got.StatusCode)
		must.StrContains(t, string(body), "Request body not received within 500ms")
		_, err = r.ReadByte()
		must.ErrorIs(t, err, io.EOF, must.Sprint("the server closes a connection whose body timed out"))
	}
	waitUsage(t, limits.budget, 0)

	resp, err = http.Post(srv.URL+"/v1/jobs/parse", "application/json", strings.NewReader(parseBody(t, 1000)))
	must.NoError(t, err)
	resp.Body.Close()
	must.Eq(t, http.StatusOK, resp.StatusCode)
}

// A declared body over the cap is refused before a byte of it is read.
func TestHTTP_OversizedBodyRefusedUpFront(t *testing.T) {
	limits := defaultBodyLimits()
	srv := limitedServer(t, limits)
	c := halfSent(t, strings.TrimPrefix(srv.URL, "http://"), maxRequestBody+1)
	got, err := http.ReadResponse(bufio.NewReader(c), nil)
	must.NoError(t, err)
	must.Eq(t, http.StatusRequestEntityTooLarge, got.StatusCode)
	now, peak := limits.budget.usage()
	must.Eq(t, 0, now)
	must.Eq(t, 0, peak)
}
