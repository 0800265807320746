package agent

import (
	"os"

	"github.com/hashicorp/hcl/v2"

	"github.com/nomad-edge/nomad/nomad/structs"
)

// clientIntroduction decodes server.client_introduction (upstream's keys):
// enforcement strict|warn|none, default_identity_ttl, max_identity_ttl.
func (d *configDecoder) clientIntroduction(blk *hcl.Block) *structs.ClientIntroductionConfig {
	const path = "server.client_introduction."
	b := d.open(blk.Body, path, bodySpec{attrs: []string{"enforcement", "default_identity_ttl", "max_identity_ttl"}})
	c := structs.DefaultClientIntroductionConfig()
	b.str("enforcement", &c.Enforcement)
	b.duration("default_identity_ttl", &c.DefaultTTL)
	b.duration("max_identity_ttl", &c.MaxTTL)
	if err := c.Validate(); err != nil {
		d.errorf(blk.DefRange, "%v", err)
	}
	return &c
}

// clientIntroToken is the introduction token the client presents:
// NOMAD_CLIENT_INTRO_TOKEN over -client-intro-token, as upstream.
func clientIntroToken(flag string) string {
	if v := os.Getenv("NOMAD_CLIENT_INTRO_TOKEN"); v != "" {
		return v
	}
	return flag
}
