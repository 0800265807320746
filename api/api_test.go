package api_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/api"
)

// seen is one request as the fake agent received it.
type seen struct {
	Method  string
	RawPath string // escaped path, exactly as sent
	Query   url.Values
	Body    string
	Header  http.Header
}

// fakeAgent is an httptest server that records requests and answers every
// one with the same status, headers and body.
type fakeAgent struct {
	URL string

	mu     sync.Mutex
	reqs   []seen
	status int
	header map[string]string
	body   string
}

func newFakeAgent(t *testing.T, status int, body string, header map[string]string) (*fakeAgent, *api.Client) {
	t.Helper()
	f := &fakeAgent{status: status, body: body, header: header}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		f.reqs = append(f.reqs, seen{
			Method:  r.Method,
			RawPath: r.URL.EscapedPath(),
			Query:   r.URL.Query(),
			Body:    string(b),
			Header:  r.Header.Clone(),
		})
		f.mu.Unlock()
		for k, v := range f.header {
			w.Header().Set(k, v)
		}
		w.WriteHeader(f.status)
		_, _ = io.WriteString(w, f.body)
	}))
	t.Cleanup(srv.Close)
	f.URL = srv.URL
	c, err := api.NewClient(&api.Config{Address: srv.URL})
	must.NoError(t, err)
	return f, c
}

func (f *fakeAgent) last(t *testing.T) seen {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	must.SliceNotEmpty(t, f.reqs)
	return f.reqs[len(f.reqs)-1]
}

// The default address must follow NOMAD_ADDR, because every operator's
// shell and every CI script sets it instead of passing -address.
func TestDefaultConfig_Env(t *testing.T) {
	t.Setenv(api.EnvAddress, "")
	t.Setenv(api.EnvNamespace, "")
	t.Setenv(api.EnvRegion, "")
	must.Eq(t, api.DefaultAddress, api.DefaultConfig().Address)

	t.Setenv(api.EnvAddress, "http://10.0.0.1:4646")
	t.Setenv(api.EnvNamespace, "edge")
	t.Setenv(api.EnvRegion, "eu")
	cfg := api.DefaultConfig()
	must.Eq(t, "http://10.0.0.1:4646", cfg.Address)
	must.Eq(t, "edge", cfg.Namespace)
	must.Eq(t, "eu", cfg.Region)

	c, err := api.NewClient(nil)
	must.NoError(t, err)
	must.Eq(t, "http://10.0.0.1:4646", c.Address())
}

// A typo in the address must fail at construction, not as a confusing
// transport error on the first call.
func TestNewClient_BadAddress(t *testing.T) {
	for _, addr := range []string{"127.0.0.1:4646", "ftp://x", "http://", "http://%zz"} {
		_, err := api.NewClient(&api.Config{Address: addr})
		must.Error(t, err, must.Sprintf("address %q", addr))
	}
}

// Blocking queries depend on index/wait reaching the agent in the upstream
// spelling and on X-Nomad-Index coming back as LastIndex.
func TestQuery_BlockingParamsAndIndex(t *testing.T) {
	f, c := newFakeAgent(t, 200, `[]`, map[string]string{
		api.HeaderIndex:       "1234",
		api.HeaderKnownLeader: "true",
		api.HeaderLastContact: "15",
	})
	_, qm, err := c.Jobs().List(&api.QueryOptions{
		Namespace: "edge",
		Region:    "eu",
		Prefix:    "we",
		WaitIndex: 1200,
		WaitTime:  5 * time.Second,
		Params:    map[string]string{"meta": "true"},
	})
	must.NoError(t, err)
	must.Eq(t, uint64(1234), qm.LastIndex)
	must.True(t, qm.KnownLeader)
	must.Eq(t, 15*time.Millisecond, qm.LastContact)

	r := f.last(t)
	must.Eq(t, http.MethodGet, r.Method)
	must.Eq(t, "/v1/jobs", r.RawPath)
	must.Eq(t, url.Values{
		"namespace": {"edge"},
		"region":    {"eu"},
		"prefix":    {"we"},
		"index":     {"1200"},
		"wait":      {"5000ms"},
		"meta":      {"true"},
	}, r.Query)
}

// The client-wide namespace applies to every call unless a request names
// its own, which is how NOMAD_NAMESPACE works upstream.
func TestQuery_ConfigNamespaceDefault(t *testing.T) {
	f, _ := newFakeAgent(t, 200, `[]`, nil)
	c, err := api.NewClient(&api.Config{Address: f.URL, Namespace: "edge"})
	must.NoError(t, err)

	_, _, err = c.Allocations().List(nil)
	must.NoError(t, err)
	must.Eq(t, "edge", f.last(t).Query.Get("namespace"))

	_, _, err = c.Allocations().List(&api.QueryOptions{Namespace: "other"})
	must.NoError(t, err)
	must.Eq(t, "other", f.last(t).Query.Get("namespace"))
}

// Endpoints without a state index (status/leader) send no X-Nomad-Index;
// that is index 0, not an error. A garbled header, though, is a protocol
// bug that must not be silently read as 0.
func TestQuery_IndexHeader(t *testing.T) {
	_, c := newFakeAgent(t, 200, `"10.0.0.1:4647"`, nil)
	leader, err := c.Status().Leader()
	must.NoError(t, err)
	must.Eq(t, "10.0.0.1:4647", leader)

	_, c = newFakeAgent(t, 200, `[]`, map[string]string{api.HeaderIndex: "abc"})
	_, _, err = c.Nodes().List(nil)
	must.ErrorContains(t, err, "X-Nomad-Index")
}

// Callers branch on the status code with errors.As (404 → "no such job"),
// so every non-2xx answer must surface as *UnexpectedResponseError with the
// agent's message intact.
func TestErrors_UnexpectedResponse(t *testing.T) {
	cases := []struct {
		name   string
		status int
		body   string
		call   func(*api.Client) error
		want   string
	}{
		{
			name: "query 404", status: 404, body: "job not found\n",
			call: func(c *api.Client) error { _, _, err := c.Jobs().Info("nope", nil); return err },
			want: "Unexpected response code: 404 (job not found)",
		},
		{
			name: "write 400", status: 400, body: "1 error occurred:\n\t* group \"web\": count must be >= 0",
			call: func(c *api.Client) error {
				_, _, err := c.Jobs().Register(&api.Job{ID: new("x")}, nil)
				return err
			},
			want: "Unexpected response code: 400 (1 error occurred:\n\t* group \"web\": count must be >= 0)",
		},
		{
			name: "empty body 500", status: 500, body: "",
			call: func(c *api.Client) error { _, err := c.Status().Leader(); return err },
			want: "Unexpected response code: 500 (Internal Server Error)",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, c := newFakeAgent(t, tc.status, tc.body, nil)
			err := tc.call(c)
			must.Error(t, err)
			var ure *api.UnexpectedResponseError
			must.True(t, errors.As(err, &ure))
			must.Eq(t, tc.status, ure.StatusCode)
			must.Eq(t, tc.want, err.Error())
			must.Eq(t, tc.status == 404, ure.IsNotFound())
		})
	}
}

// A 2xx answer without the promised body is a server bug; report it rather
// than hand back a zero-valued job.
func TestQuery_EmptyBody(t *testing.T) {
	_, c := newFakeAgent(t, 200, "", nil)
	_, _, err := c.Jobs().Info("x", nil)
	must.ErrorContains(t, err, "empty response body")
}

// A blocking query must be abandonable: the CLI cancels it on Ctrl-C.
func TestQuery_ContextCancel(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) })
	c, err := api.NewClient(&api.Config{Address: srv.URL})
	must.NoError(t, err)

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, _, err := c.Jobs().List((&api.QueryOptions{WaitIndex: 5}).WithContext(ctx))
		done <- err
	}()
	cancel()
	err = <-done
	must.ErrorIs(t, err, context.Canceled)
}
