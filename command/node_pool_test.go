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
