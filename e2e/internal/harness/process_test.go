package harness

import (
	"strings"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/testutil/wait"
)

// A Program runs as an agent does: its command line is its own, with the
// config file and data dir substituted, its output goes to its log, and
// Stop ends it; the suites run the Nomad Autoscaler this way.
func TestAgents_Program(t *testing.T) {
	ags := NewAgents(t)
	p := ags.Add(AgentConfig{
		Name:    "prog",
		Program: "/bin/sh",
		Config:  "config of @DATA_DIR@",
		Args:    []string{"-c", "cat " + ConfigVar + "; echo; echo args saw " + DataDirVar + "; exec sleep 300"},
	})
	p.Start()
	wait.Poll(t, 10*time.Second, "the program's output in its log", func() (bool, string) {
		log := p.Log()
		return strings.Contains(log, "config of "+p.DataDir) && strings.Contains(log, "args saw "+p.DataDir), log
	})
	must.True(t, p.Running())
	p.Stop()
	must.False(t, p.Running())
	p.MustNotHaveDied()
}
