package agent_test

import (
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/api"
	"github.com/nomad-edge/nomad/command/agent/agenttest"
)

// A pool's site_outage setting goes through the HTTP API and reads back
// with its defaults filled in; an out-of-range value is a 400 naming the
// field; the pool's declared outages are listed (none while its sites are
// up), and an unknown pool's are a 404.
func TestAgent_NodePoolSiteOutage(t *testing.T) {
	dev := agenttest.NewDevAgent(t, nil)
	c, err := api.NewClient(&api.Config{Address: dev.HTTPAddr})
	must.NoError(t, err)
	np := c.NodePools()

	_, err = np.Register(&api.NodePool{Name: "edge", Disconnect: &api.NodePoolDisconnect{
		SiteOutage: &api.NodePoolSiteOutage{Threshold: 2}}}, nil)
	must.ErrorContains(t, err, "400")
	must.ErrorContains(t, err, "disconnect.site_outage.threshold 2 must be greater than 0 and at most 1")

	_, err = np.Register(&api.NodePool{Name: "edge", Disconnect: &api.NodePoolDisconnect{
		LostAfter: time.Hour, SiteOutage: &api.NodePoolSiteOutage{Scope: "pool"}}}, nil)
	must.NoError(t, err)
	info, _, err := np.Info("edge", nil)
	must.NoError(t, err)
	must.Eq(t, &api.NodePoolSiteOutage{Threshold: 0.5, Window: time.Minute, Scope: "pool", MinNodes: 2}, info.Disconnect.SiteOutage)

	outages, qm, err := np.SiteOutages("edge", nil)
	must.NoError(t, err)
	must.NotNil(t, outages)
	must.Len(t, 0, outages)
	must.Positive(t, qm.LastIndex)
	_, _, err = np.SiteOutages("nope", nil)
	must.ErrorContains(t, err, "404")
}
