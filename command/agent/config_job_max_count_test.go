package agent

import (
	"testing"

	"github.com/shoenig/test/must"
)

// server.job_max_count, upstream's key, reaches the server's config, and
// a value out of range is refused naming the key: it used to be refused
// as unsupported.
func TestConfig_JobMaxCount(t *testing.T) {
	c, err := ParseConfig("agent.hcl", []byte("server {\n  job_max_count = 1234\n}\n"))
	must.NoError(t, err)
	must.Eq(t, 1234, c.Server.JobMaxCount)

	_, err = ParseConfig("agent.hcl", []byte("server {\n  job_max_count = -1\n}\n"))
	must.ErrorContains(t, err, "server.job_max_count")
}
