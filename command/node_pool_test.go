package command

import (
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/api"
)

// The pool spec file `nomad node pool apply` reads: description, meta and
// our disconnect block; upstream's scheduler_config (not implemented) and
// a bad duration are refused with their position.
func TestParseNodePoolSpec(t *testing.T) {
	src := `node_pool "edge" {
  description = "LTE sites"
  meta {
    link = "lte"
  }
  disconnect {
    lost_after = "1h"
    replace    = false
    reconcile  = "keep_original"
  }
}
`
	pool, err := parseNodePoolSpec([]byte(src), "edge.hcl", false)
	must.NoError(t, err)
	no := false
	must.Eq(t, &api.NodePool{Name: "edge", Description: "LTE sites", Meta: map[string]string{"link": "lte"},
		Disconnect: &api.NodePoolDisconnect{LostAfter: time.Hour, Replace: &no, Reconcile: "keep_original"}}, pool)

	_, err = parseNodePoolSpec([]byte("node_pool \"x\" {\n  scheduler_config {\n  }\n}\n"), "x.hcl", false)
	must.ErrorContains(t, err, "x.hcl:2:3: Unsupported block type")
	_, err = parseNodePoolSpec([]byte("node_pool \"x\" {\n  disconnect {\n    lost_after = \"soon\"\n  }\n}\n"), "x.hcl", false)
	must.ErrorContains(t, err, "x.hcl:3:18: Invalid duration")
	_, err = parseNodePoolSpec([]byte(""), "e.hcl", false)
	must.ErrorContains(t, err, "exactly one node_pool")
}

// info shows the pool's policy with its defaults filled in, so an
// operator sees what groups placed there will get.
func TestFormatNodePool(t *testing.T) {
	out := formatNodePool(&api.NodePool{Name: "edge", Disconnect: &api.NodePoolDisconnect{LostAfter: time.Hour}})
	must.StrContains(t, out, "Lost After = 1h0m0s")
	must.StrContains(t, out, "Replace    = true")
	must.StrContains(t, out, "Reconcile  = best_score")
	must.StrContains(t, formatNodePool(&api.NodePool{Name: "x"}), "No disconnect policy")
}

// job plan prints each group's disconnect policy with where it came from.
func TestFormatPlanDisconnect(t *testing.T) {
	must.Eq(t, "", formatPlanDisconnect(nil))
	must.Eq(t, "Disconnect policy:\n  group \"a\": none\n  group \"b\": lost_after 1h (from node pool edge)",
		formatPlanDisconnect(map[string][]string{"b": {"lost_after 1h (from node pool edge)"}, "a": {"none"}}))
}

// The site_outage block of a pool spec: its settings are read, an unknown
// key is refused by name, and each out-of-range value is refused with the
// attribute's position and its name, so an operator fixes the file, not a
// guess.
func TestParseNodePoolSpec_SiteOutage(t *testing.T) {
	spec := func(body string) string {
		return "node_pool \"edge\" {\n  disconnect {\n    site_outage {\n" + body + "    }\n  }\n}\n"
	}
	pool, err := parseNodePoolSpec([]byte(spec("      threshold = 0.75\n      window = \"90s\"\n      scope = \"pool\"\n      min_nodes = 3\n")), "p.hcl", false)
	must.NoError(t, err)
	must.Eq(t, &api.NodePoolSiteOutage{Threshold: 0.75, Window: 90 * time.Second, Scope: "pool", MinNodes: 3}, pool.Disconnect.SiteOutage)

	pool, err = parseNodePoolSpec([]byte(spec("")), "p.hcl", false)
	must.NoError(t, err)
	must.Eq(t, &api.NodePoolSiteOutage{}, pool.Disconnect.SiteOutage)

	for _, tc := range []struct{ body, want string }{
		{"      treshold = 0.5\n", `p.hcl:4:7: Unsupported argument; An argument named "treshold" is not expected here`},
		{"      threshold = 0\n", "p.hcl:4:19: Invalid value; site_outage.threshold 0 must be greater than 0 and at most 1."},
		{"      threshold = 1.5\n", "p.hcl:4:19: Invalid value; site_outage.threshold 1.5 must be greater than 0 and at most 1."},
		{"      threshold = \"half\"\n", "site_outage.threshold must be a number"},
		{"      window = \"-1m\"\n", `p.hcl:4:16: Invalid value; site_outage.window "-1m" must be positive.`},
		{"      window = \"soon\"\n", "site_outage.window: time: invalid duration"},
		{"      scope = \"region\"\n", `site_outage.scope "region" is not one of "datacenter" or "pool".`},
		{"      min_nodes = 0\n", "site_outage.min_nodes 0 must be at least 1."},
		{"      min_nodes = 1.5\n", "site_outage.min_nodes must be a whole number"},
	} {
		_, err := parseNodePoolSpec([]byte(spec(tc.body)), "p.hcl", false)
		must.ErrorContains(t, err, tc.want, must.Sprint(tc.body))
	}
	_, err = parseNodePoolSpec([]byte("node_pool \"x\" {\n  disconnect {\n    site_outage {\n    }\n    site_outage {\n    }\n  }\n}\n"), "x.hcl", false)
	must.ErrorContains(t, err, "Duplicate site_outage block")
}

// info shows the site outage setting with the servers' defaults, or says
// the pool has none.
func TestFormatNodePool_SiteOutage(t *testing.T) {
	out := formatNodePool(&api.NodePool{Name: "edge", Disconnect: &api.NodePoolDisconnect{
		LostAfter: time.Hour, SiteOutage: &api.NodePoolSiteOutage{Threshold: 0.75}}})
	must.StrContains(t, out, "Site Outage Detection\nThreshold = 0.75\nWindow    = 1m0s\nScope     = datacenter\nMin Nodes = 2")
	out = formatNodePool(&api.NodePool{Name: "edge", Disconnect: &api.NodePoolDisconnect{LostAfter: time.Hour}})
	must.StrContains(t, out, "No site outage detection")
}

// info lists the pool's declared site outages with what declared them.
func TestFormatSiteOutages(t *testing.T) {
	must.Eq(t, "None", formatSiteOutages(nil))
	at := time.Date(2026, 12, 1, 14, 0, 0, 0, time.UTC).UnixNano()
	out := formatSiteOutages([]*api.SiteOutage{
		{Pool: "edge", Datacenter: "dc1", DeclaredAt: at, Disconnected: 6, Nodes: 8, Window: time.Minute},
		{Pool: "edge", DeclaredAt: at, Disconnected: 3, Nodes: 4, Window: time.Minute},
	})
	must.Eq(t, "Site          Declared At           Nodes Disconnected\n"+
		"dc1           2026-12-01T14:00:00Z  6/8 within 1m0s\n"+
		"(whole pool)  2026-12-01T14:00:00Z  3/4 within 1m0s", out)
}
