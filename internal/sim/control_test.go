package sim_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/internal/sim"
)

// unreachableFleet is a fleet whose servers never answer: enough to drive
// the controls, which act on the nodes' links, not on the servers.
func unreachableFleet(t *testing.T, n int) *sim.Fleet {
	t.Helper()
	f, err := sim.Start(sim.Config{Count: n, Servers: []string{"127.0.0.1:1"}, DataDir: t.TempDir(),
		Datacenters: []string{"dc1", "dc2"}})
	must.NoError(t, err)
	t.Cleanup(f.Shutdown)
	return f
}

// A scenario or a script picks who goes silent: a fraction, a
// datacenter, or both; silencing twice counts each node once; a return
// brings back exactly the silenced ones.
func TestFleet_SilenceAndReturn(t *testing.T) {
	f := unreachableFleet(t, 10)
	n, err := f.Silence(sim.Selection{Datacenter: "dc2"})
	must.NoError(t, err)
	must.Eq(t, 5, n)
	n, err = f.Silence(sim.Selection{Fraction: 0.2, Seed: 1})
	must.NoError(t, err)
	must.LessEq(t, 2, n, must.Sprint("a fifth of ten, some of them already silent"))
	must.Eq(t, 5+n, f.Stats().Silenced)
	must.Eq(t, 5+n, f.Return(0))
	must.Eq(t, 0, f.Stats().Silenced)

	_, err = f.Silence(sim.Selection{Datacenter: "dc9"})
	must.ErrorContains(t, err, `no node in datacenter "dc9"`)
	_, err = f.Silence(sim.Selection{Fraction: 1.5})
	must.ErrorContains(t, err, "fraction must be within (0, 1]")
	_, err = f.Flap(sim.Flapping{Period: 0, For: time.Minute})
	must.ErrorContains(t, err, "positive period")
}

// The return modes are spelled as the flag takes them; anything else is
// an error that says what is expected.
func TestParseReturn(t *testing.T) {
	for in, want := range map[string]time.Duration{"": 0, "all": 0, "spread:5s": 5 * time.Second} {
		got, err := sim.ParseReturn(in)
		must.NoError(t, err)
		must.Eq(t, want, got, must.Sprintf("%q", in))
	}
	for _, in := range []string{"spread", "spread:soon", "later"} {
		_, err := sim.ParseReturn(in)
		must.ErrorContains(t, err, "want all or spread:<duration>", must.Sprintf("%q", in))
	}
}

// The control endpoint silences and returns nodes, and a bad parameter is
// a 400 naming it, not a silent default.
func TestHandler(t *testing.T) {
	f := unreachableFleet(t, 4)
	srv := httptest.NewServer(f.Handler())
	t.Cleanup(srv.Close)
	post := func(path string) (int, string) {
		resp, err := http.Post(srv.URL+path, "", nil)
		must.NoError(t, err)
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	code, body := post("/v1/sim/silence?datacenter=dc1&for=1h")
	must.Eq(t, http.StatusOK, code)
	must.StrContains(t, body, `"Silenced": 2`)
	code, body = post("/v1/sim/return")
	must.Eq(t, http.StatusOK, code)
	must.StrContains(t, body, `"Returned": 2`)
	for path, field := range map[string]string{
		"/v1/sim/silence?fraction=lots": "fraction",
		"/v1/sim/silence?for=ever":      "for",
		"/v1/sim/silence?return=later":  "return",
		"/v1/sim/return?spread=-1s":     "spread",
		"/v1/sim/flap?period=fast":      "period",
	} {
		code, body := post(path)
		must.Eq(t, http.StatusBadRequest, code, must.Sprint(path))
		must.True(t, strings.HasPrefix(body, field), must.Sprintf("%s: %s", path, body))
	}
	resp, err := http.Get(srv.URL + "/v1/sim/status")
	must.NoError(t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	must.StrContains(t, string(b), `"Nodes": 4`)
}
