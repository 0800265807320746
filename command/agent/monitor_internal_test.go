package agent

import (
	"bytes"
	"strings"
	"testing"

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
	must.StrContains(t, out.String(), "agent.http: served")
	must.False(t, strings.Contains(out.String(), "hidden"))
}
