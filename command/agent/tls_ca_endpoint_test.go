package agent_test

import (
	"testing"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/api"
	"github.com/nomad-edge/nomad/command/agent/agenttest"
)

// The operator TLS CA routes answer through our api client: an empty list
// and a 400 naming tls.auto on a cluster whose servers do not run it, so
// an operator learns why a rotation did nothing.
func TestHTTP_OperatorTLSCA_WithoutAuto(t *testing.T) {
	a := agenttest.NewDevAgent(t, nil)
	c, err := api.NewClient(&api.Config{Address: a.HTTPAddr})
	must.NoError(t, err)
	cas, _, err := c.Operator().TLSCAs(nil)
	must.NoError(t, err)
	must.SliceEmpty(t, cas)
	_, _, err = c.Operator().TLSCARotate(nil)
	must.ErrorContains(t, err, "tls.auto is not enabled")
	must.ErrorContains(t, err, "400")
}
