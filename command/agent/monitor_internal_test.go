package agent

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/shoenig/test/must"
)

// A monitor whose reader stalls drops lines past its buffer and counts
// them; the logger writing never blocks.
func TestLogMonitor_DropsWhenFull(t *testing.T) {
	m := newLogMonitor(hclog.Debug, false)
	il := hclog.NewInterceptLogger(&hclog.LoggerOptions{Level: hclog.Off})
	il.RegisterSink(m.sink)
	for range monitorBuffer + 7 {
		il.Debug("line")
	}
	il.Trace("below the monitor's level")
	must.Eq(t, int64(7), m.dropped.Load())
	must.Eq(t, monitorBuffer, len(m.lines))
	must.StrContains(t, string(<-m.lines), "[DEBUG] line")
}

// A plain logger handed to the agent still gets every line it would have
// written itself, under the sub-logger's name, at its own level.
func TestInterceptable_ForwardsToPlainLogger(t *testing.T) {
	var out bytes.Buffer
	plain := hclog.New(&hclog.LoggerOptions{Name: "agent", Level: hclog.Info, Output: &out})
	il := interceptable(plain)
	il.Named("http").Info("served")
	il.Debug("hidden")
	must.False(t, il.IsDebug())
	must.StrContains(t, out.String(), "agent.http: served")
	must.False(t, strings.Contains(out.String(), "hidden"))
}

// The stream tells its reader how many lines it lost to a full buffer,
// then carries on with the next line; silence gets an empty heartbeat.
func TestStreamMonitor_ReportsDropsAndHeartbeats(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := newLogMonitor(hclog.Info, false)
		il := hclog.NewInterceptLogger(&hclog.LoggerOptions{Level: hclog.Off})
		il.RegisterSink(m.sink)
		for range monitorBuffer + 3 {
			il.Info("line")
		}
		// Drain what fits, as a reader that was stalled and catches up.
		for range monitorBuffer {
			<-m.lines
		}
		il.Info("after the gap")

		// The writer runs in the stream's goroutine: a mutex, not only
		// synctest.Wait, orders its writes before the test's reads for the
		// race detector.
		var mu sync.Mutex
		var writes []string
		seen := func() []string {
			mu.Lock()
			defer mu.Unlock()
			return slices.Clone(writes)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			(&HTTPServer{}).streamMonitor(ctx, m, func(p []byte) error {
				mu.Lock()
				writes = append(writes, string(p))
				mu.Unlock()
				return nil
			})
		}()
		synctest.Wait()
		got := seen()
		must.Len(t, 1, got)
		must.StrContains(t, got[0], "dropped 3 log lines")
		must.StrContains(t, got[0], "after the gap")

		time.Sleep(eventHeartbeat)
		synctest.Wait()
		got = seen()
		must.Len(t, 2, got)
		must.Eq(t, "", got[1])
		cancel()
		<-done
	})
}
