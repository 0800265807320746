package sim

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/pprof"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// ParseReturn reads how silenced nodes come back: "all" (the same
// instant) or "spread:<duration>" (each at a random moment within it).
func ParseReturn(s string) (time.Duration, error) {
	switch {
	case s == "" || s == "all":
		return 0, nil
	case strings.HasPrefix(s, "spread:"):
		d, err := time.ParseDuration(strings.TrimPrefix(s, "spread:"))
		if err != nil || d < 0 {
			return 0, fmt.Errorf("return %q: want all or spread:<duration>, e.g. spread:5s", s)
		}
		return d, nil
	}
	return 0, fmt.Errorf("return %q: want all or spread:<duration>, e.g. spread:5s", s)
}

// Outage is a silence with its end scheduled.
type Outage struct {
	Selection
	// For is how long the nodes stay silent; zero means until Return.
	For time.Duration
	// Spread is how their return is spread (see ParseReturn).
	Spread time.Duration
}

// SilenceFor silences the selected nodes now and, when o.For is set,
// returns them after it. It returns how many it silenced.
func (f *Fleet) SilenceFor(o Outage) (int, error) {
	n, err := f.Silence(o.Selection)
	if err != nil || o.For <= 0 {
		return n, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.timers = append(f.timers, time.AfterFunc(o.For, func() { f.Return(o.Spread) }))
	return n, nil
}

// Memory is the simulator process's memory, for bytes-per-node figures.
type Memory struct {
	HeapInuse  uint64
	StackInuse uint64
	Sys        uint64
	Goroutines int
}

// ReadMemory reads the process's memory now.
func ReadMemory() Memory {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return Memory{HeapInuse: ms.HeapInuse, StackInuse: ms.StackInuse, Sys: ms.Sys, Goroutines: runtime.NumGoroutine()}
}

// Status is the control endpoint's GET body.
type Status struct {
	Stats
	Memory Memory
}

// Handler is the control endpoint, to be served on loopback:
//
//	GET  /v1/sim/status                      nodes, allocations, restarts, heartbeat latency, memory
//	POST /v1/sim/silence?fraction=&datacenter=&for=&return=&seed=
//	POST /v1/sim/flap?fraction=&datacenter=&period=&for=&seed=   silent half of each period
//	POST /v1/sim/return?spread=
//	POST /v1/sim/latency/reset               forget heartbeat samples
//	GET  /debug/pprof/...                    the simulator's own profiles
//
// Errors name the parameter, with status 400.
func (f *Fleet) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/sim/status", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, Status{Stats: f.Stats(), Memory: ReadMemory()})
	})
	mux.HandleFunc("GET /v1/sim/silenced", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, map[string][]string{"NodeIDs": f.SilencedIDs()})
	})
	mux.HandleFunc("POST /v1/sim/silence", func(w http.ResponseWriter, r *http.Request) {
		o, err := outageFromQuery(r)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		n, err := f.SilenceFor(o)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		writeJSON(w, map[string]int{"Silenced": n})
	})
	mux.HandleFunc("POST /v1/sim/flap", func(w http.ResponseWriter, r *http.Request) {
		o, err := outageFromQuery(r)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		period, err := durationParam(r, "period")
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		n, err := f.Flap(Flapping{Selection: o.Selection, Period: period, For: o.For})
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		writeJSON(w, map[string]int{"Flapping": n})
	})
	mux.HandleFunc("POST /v1/sim/return", func(w http.ResponseWriter, r *http.Request) {
		spread, err := durationParam(r, "spread")
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		writeJSON(w, map[string]int{"Returned": f.Return(spread)})
	})
	mux.HandleFunc("POST /v1/sim/latency/reset", func(w http.ResponseWriter, _ *http.Request) {
		f.ResetLatency()
		writeJSON(w, map[string]bool{"Reset": true})
	})
	// The simulator's own profiles say what a simulated node costs.
	mux.HandleFunc("GET /debug/pprof/", pprof.Index)
	mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
	return mux
}

func outageFromQuery(r *http.Request) (Outage, error) {
	q := r.URL.Query()
	o := Outage{Selection: Selection{Datacenter: q.Get("datacenter")}}
	if v := q.Get("fraction"); v != "" {
		x, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return o, fmt.Errorf("fraction %q: not a number", v)
		}
		o.Fraction = x
	}
	if v := q.Get("seed"); v != "" {
		x, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return o, fmt.Errorf("seed %q: not an unsigned integer", v)
		}
		o.Seed = x
	}
	var err error
	if o.For, err = durationParam(r, "for"); err != nil {
		return o, err
	}
	if o.Spread, err = ParseReturn(q.Get("return")); err != nil {
		return o, err
	}
	return o, nil
}

func durationParam(r *http.Request, name string) (time.Duration, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("%s %q: want a duration such as 30s", name, v)
	}
	return d, nil
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}
